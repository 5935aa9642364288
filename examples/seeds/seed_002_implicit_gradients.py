"""Seed 002, part 3: gt.implicit_gradients, then with w1 untrainable."""
import gradtape as gt

w1 = gt.Variable(2.0)
w2 = gt.Variable(3.0)


def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2


grad_fn = gt.implicit_gradients(weighted_sum)
[(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5., 7.)
print(w1_grad.numpy())  # 5.0 = gradient of s with regards to w1 = x1

assert w1_var is w1
assert w2_var is w2

# Making w1 untrainable: grad_fn only returns the gradient of s with regards to w2.
w1 = gt.Variable(2., trainable=False)


def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2


grad_fn = gt.implicit_gradients(weighted_sum)
grads_and_vars = grad_fn(5., 7.)
print(len(grads_and_vars))  # 1
[(w2_grad, w2_var)] = grads_and_vars
assert w2_var is w2
print(w2_grad.numpy())  # 7.0 = gradient of s with regards to w2 = x2
