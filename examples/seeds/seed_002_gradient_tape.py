"""Seed 002, part 1: a small function and its gradient with gt.GradientTape."""
import gradtape as gt

w1 = gt.Variable(2.0)
w2 = gt.Variable(3.0)


def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2


s = weighted_sum(5., 7.)
print(s.numpy())  # 31

with gt.GradientTape() as tape:
    s = weighted_sum(5., 7.)

[w1_grad] = tape.gradient(s, [w1])
print(w1_grad.numpy())  # 5.0 = gradient of s with regards to w1 = x1
