"""Seed 001: reduce_sum and multiply on a persistent tape, a Variable's second derivative,
and gradients through Python control flow."""
import gradtape as tf

x = tf.ones((2, 2))
with tf.GradientTape(persistent=True) as t:
    t.watch(x)
    y = tf.reduce_sum(x)
    z = tf.multiply(y, y)
dz_dy = t.gradient(z, y)
dz_dx = t.gradient(z, x)
print(dz_dy)  # 8.0
print(dz_dx)  # [[8. 8.] [8. 8.]]

x = tf.Variable(1.0)
with tf.GradientTape() as t:
    with tf.GradientTape() as tt:
        tt.watch(x)
        y = x * x * x
    dy_dx = tt.gradient(y, x)
    print(dy_dx)  # 3.0
    t.watch(dy_dx)
dy2_d2x = t.gradient(dy_dx, x)
print(dy2_d2x)  # 6.0


def f(x, y):
    output = 2.0
    for i in range(y):
        if i > 1 and i < 5:
            output = tf.multiply(output, x)
    return output


def grad(x, y):
    with tf.GradientTape() as t:
        t.watch(x)
        out = f(x, y)
    return t.gradient(out, x)


x = tf.convert_to_tensor(2.0)
print(grad(x, 6))  # 24.0
print(grad(x, 5))  # 24.0
print(grad(x, 4))  # 8.0
