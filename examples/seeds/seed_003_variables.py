"""Seed 003: constants and Variables, watch_accessed_variables, higher derivatives,
persistent tapes, stop_recording and control flow."""
import gradtape as tf

x = tf.constant(3.0)
with tf.GradientTape() as tape:
    tape.watch(x)
    y = x * x
dy_dx = tape.gradient(y, x)
print(dy_dx.numpy())  # 6.0

x = tf.constant(3.0)
with tf.GradientTape() as tape:
    y = x * x
dy_dx = tape.gradient(y, x)
print(dy_dx)  # None

x = tf.Variable(3.0, trainable=True)
with tf.GradientTape() as tape:
    y = x * x
dy_dx = tape.gradient(y, x)
print(dy_dx.numpy())  # 6.0

x = tf.Variable(3.0, trainable=True)
m = tf.Variable(2.0, trainable=True)
with tf.GradientTape(watch_accessed_variables=False) as tape:
    tape.watch(x)
    y = x * x
    n = m * m
print(tape.gradient(y, x).numpy())  # 6.0

x = tf.Variable(3.0, trainable=True)
m = tf.Variable(2.0, trainable=True)
with tf.GradientTape(watch_accessed_variables=False) as tape:
    tape.watch(x)
    y = x * x
    n = m * m
print(tape.gradient(n, m))  # None

x = tf.Variable(3.0, trainable=True)
with tf.GradientTape() as tape_2:
    with tf.GradientTape() as tape_1:
        y = x ** 3
    g_1 = tape_1.gradient(y, x)
g_2 = tape_2.gradient(g_1, x)
print(g_2.numpy())  # 18.0

x = tf.Variable(3.0, trainable=True)
with tf.GradientTape() as tape:
    y = x ** 3
g_1 = tape.gradient(y, x)
try:
    g_2 = tape.gradient(g_1, x)
except RuntimeError as exc:
    print("RuntimeError:", exc)

x = tf.Variable(3.0, trainable=True)
with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = x * x
    z = y * y
print(tape.gradient(y, x).numpy())  # 6.0
print(tape.gradient(z, x).numpy())  # 108.0

x = tf.Variable(3.0, trainable=True)
m = tf.Variable(2.0, trainable=True)
with tf.GradientTape(persistent=True) as tape:
    y = x * x
    with tape.stop_recording():
        print(tape.gradient(y, x).numpy())  # 6.0
    n = m * m
    with tape.stop_recording():
        print(tape.gradient(n, m).numpy())  # 4.0


def f(x, y):
    output = 1.0
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
assert grad(x, 6).numpy() == 12.0
print(grad(x, 6).numpy())  # 12.0
