"""Seed 002, part 4: gt.implicit_value_and_gradients gives the value and the gradients."""
import gradtape as gt

w1 = gt.Variable(2.0)
w2 = gt.Variable(3.0)


def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2


grad_fn = gt.implicit_value_and_gradients(weighted_sum)
s, [(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5., 7.)
print(s.numpy())  # 31.0 = s = w1 * x1 + w2 * x2
