"""A CycleGAN-style training step: two generators, two discriminators, one persistent tape,
four optimizers (the structure of seed 004's ``train_step``, on synthetic data).

Domain X holds points of a Gaussian cloud; domain Y the same cloud under a fixed linear map
and shift. Generator G maps X -> Y, F maps Y -> X; discriminator D_X judges X, D_Y judges Y.
One persistent tape records the whole forward pass and gives each of the four models its
gradient, and each model has its own Adam optimizer (learning rate 2e-4, beta_1 0.5, as in
the CycleGAN tutorial).

    python examples/cyclegan_step.py [--steps 200] [--batch 64] [--dim 4] [--hidden 32]
"""
import argparse

import numpy as np

import gradtape as gt

LAMBDA = 10.0

bce = gt.losses.BinaryCrossentropy(from_logits=True)


def make_generator(dim, hidden, name):
    return gt.keras.Sequential([gt.layers.Dense(hidden, activation="relu"),
                                gt.layers.Dense(hidden, activation="relu"),
                                gt.layers.Dense(dim)], name=name)


def make_discriminator(hidden, name):
    return gt.keras.Sequential([gt.layers.Dense(hidden, activation="leaky_relu"),
                                gt.layers.Dense(1)], name=name)


def generator_loss(generated):
    return bce(gt.ones_like(generated), generated)


def discriminator_loss(real, generated):
    return 0.5 * (bce(gt.ones_like(real), real) + bce(gt.zeros_like(generated), generated))


def calc_cycle_loss(real, cycled):
    return LAMBDA * gt.reduce_mean(gt.abs(real - cycled))


def identity_loss(real, same):
    return LAMBDA * 0.5 * gt.reduce_mean(gt.abs(real - same))


class CycleGAN:
    """The four models, their four optimizers and the training step."""

    def __init__(self, dim=4, hidden=32, learning_rate=2e-4):
        self.generator_g = make_generator(dim, hidden, "generator_g")
        self.generator_f = make_generator(dim, hidden, "generator_f")
        self.discriminator_x = make_discriminator(hidden, "discriminator_x")
        self.discriminator_y = make_discriminator(hidden, "discriminator_y")
        self.generator_g_optimizer = gt.optimizers.Adam(learning_rate, beta_1=0.5)
        self.generator_f_optimizer = gt.optimizers.Adam(learning_rate, beta_1=0.5)
        self.discriminator_x_optimizer = gt.optimizers.Adam(learning_rate, beta_1=0.5)
        self.discriminator_y_optimizer = gt.optimizers.Adam(learning_rate, beta_1=0.5)

    def build(self, dim):
        zeros = gt.zeros((1, dim))
        for model in (self.generator_g, self.generator_f, self.discriminator_x,
                      self.discriminator_y):
            model(zeros)

    def train_step(self, real_x, real_y):
        """One step of all four models; returns the losses as Python floats."""
        g, f = self.generator_g, self.generator_f
        dx, dy = self.discriminator_x, self.discriminator_y
        with gt.GradientTape(persistent=True) as tape:
            fake_y = g(real_x, training=True)
            cycled_x = f(fake_y, training=True)
            fake_x = f(real_y, training=True)
            cycled_y = g(fake_x, training=True)
            same_x = f(real_x, training=True)
            same_y = g(real_y, training=True)

            disc_real_x = dx(real_x, training=True)
            disc_real_y = dy(real_y, training=True)
            disc_fake_x = dx(fake_x, training=True)
            disc_fake_y = dy(fake_y, training=True)

            gen_g_loss = generator_loss(disc_fake_y)
            gen_f_loss = generator_loss(disc_fake_x)
            total_cycle_loss = calc_cycle_loss(real_x, cycled_x) + \
                calc_cycle_loss(real_y, cycled_y)
            total_gen_g_loss = gen_g_loss + total_cycle_loss + identity_loss(real_y, same_y)
            total_gen_f_loss = gen_f_loss + total_cycle_loss + identity_loss(real_x, same_x)
            disc_x_loss = discriminator_loss(disc_real_x, disc_fake_x)
            disc_y_loss = discriminator_loss(disc_real_y, disc_fake_y)

        pairs = ((total_gen_g_loss, g, self.generator_g_optimizer),
                 (total_gen_f_loss, f, self.generator_f_optimizer),
                 (disc_x_loss, dx, self.discriminator_x_optimizer),
                 (disc_y_loss, dy, self.discriminator_y_optimizer))
        grads = [tape.gradient(loss, model.trainable_variables) for loss, model, _ in pairs]
        del tape
        for (_, model, opt), g_list in zip(pairs, grads):
            opt.apply_gradients(zip(g_list, model.trainable_variables))
        return {"gen_g": float(total_gen_g_loss.numpy()),
                "gen_f": float(total_gen_f_loss.numpy()),
                "cycle": float(total_cycle_loss.numpy()),
                "disc_x": float(disc_x_loss.numpy()), "disc_y": float(disc_y_loss.numpy())}


def make_data(n, dim, seed):
    """Unpaired samples of the two domains."""
    rng = np.random.default_rng(seed)
    mixing = np.linalg.qr(rng.standard_normal((dim, dim)))[0] * 1.5
    x = rng.standard_normal((n, dim)).astype(np.float32)
    y = (rng.standard_normal((n, dim)) @ mixing + 2.0).astype(np.float32)
    return x, y


def train(steps=200, batch=64, dim=4, hidden=32, seed=0, learning_rate=2e-4, verbose=True):
    """Train on synthetic data; returns ``(model, [losses per step])``."""
    gt.random.set_seed(seed)
    x, y = make_data(max(batch * 4, 256), dim, seed)
    rng = np.random.default_rng(seed + 1)
    gan = CycleGAN(dim, hidden, learning_rate)
    history = []
    for step in range(steps):
        ix = rng.integers(0, len(x), batch)
        iy = rng.integers(0, len(y), batch)
        losses = gan.train_step(gt.constant(x[ix]), gt.constant(y[iy]))
        history.append(losses)
        if verbose and (step % max(1, steps // 10) == 0 or step == steps - 1):
            print(f"step {step:4d}  " + "  ".join(f"{k} {v:.4f}" for k, v in losses.items()))
    return gan, history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dim", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)
    with gt.device(args.device or gt.backend.default_device()):
        train(args.steps, args.batch, args.dim, args.hidden, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
