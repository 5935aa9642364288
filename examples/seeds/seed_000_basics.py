"""Seed 000: y = x^2 at x = 3, nested tapes for the second derivative, a persistent tape."""
import gradtape as tf

x = tf.constant(3.0)
with tf.GradientTape() as g:
    g.watch(x)
    y = x * x
dy_dx = g.gradient(y, x)  # y' = 2*x = 2*3 = 6
print("dy_dx", dy_dx.numpy())

x = tf.constant(3.0)
with tf.GradientTape() as g:
    g.watch(x)
    with tf.GradientTape() as gg:
        gg.watch(x)
        y = x * x
    dy_dx = gg.gradient(y, x)  # y' = 2*x = 2*3 = 6
d2y_dx2 = g.gradient(dy_dx, x)  # y'' = 2
print("dy_dx", dy_dx.numpy())
print("d2y_dx2", d2y_dx2.numpy())

x = tf.constant(3.0)
with tf.GradientTape(persistent=True) as g:
    g.watch(x)
    y = x * x
    z = y * y
dz_dx = g.gradient(z, x)  # z = y^2 = x^4, z' = 4*x^3 = 4*3^3
dy_dx = g.gradient(y, x)  # y' = 2*x = 2*3 = 6
del g  # drop the tape
print("dz_dx", dz_dx.numpy())
print("dy_dx", dy_dx.numpy())
