"""Seed 002, part 2: gt.gradients_function, over all arguments and over named params."""
import gradtape as gt

w1 = gt.Variable(2.0)
w2 = gt.Variable(3.0)


def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2


grad_fn = gt.gradients_function(weighted_sum)
x1_grad, x2_grad = grad_fn(5., 7.)
print(x1_grad.numpy())  # 2.0 = gradient of s with regards to x1 = w1


def weighted_sum_with_weights(w1, x1, w2, x2):
    return w1 * x1 + w2 * x2


grad_fn = gt.gradients_function(weighted_sum_with_weights, params=["w1", "w2"])
[w1_grad, w2_grad] = grad_fn(w1, 5., w2, 7.)
print(w2_grad.numpy())  # 7.0 = gradient of s with regards to w2 = x2
