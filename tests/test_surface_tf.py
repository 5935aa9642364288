"""TensorFlow's set-up surface that training scripts carry as boilerplate: ``gt.distribute``
(one-device strategies), ``gt.config`` (devices, logical configurations, threads, optimizer
switches), ``gt.debugging`` switches, the remaining top-level helpers, and Keras 3's
top-level names, ``keras.random``, ``keras.config``, ``keras.utils`` additions, the extra
activations and initializer aliases. Reference values are TensorFlow 2.21 / Keras 3's."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import gradtape as gt
from gradtape import backend

keras = gt.keras


# --- gt.distribute ------------------------------------------------------------------------------

def test_default_strategy_outside_any_scope():
    s = gt.distribute.get_strategy()
    assert s.num_replicas_in_sync == 1 and s.cluster_resolver is None
    assert not gt.distribute.has_strategy() and not gt.distribute.in_cross_replica_context()
    ctx = gt.distribute.get_replica_context()
    assert ctx.replica_id_in_sync_group == 0 and ctx.num_replicas_in_sync == 1
    assert ctx.strategy is s and gt.distribute.get_strategy() is s


def test_mirrored_strategy_scope_and_run_contexts():
    """TensorFlow: in scope has_strategy and cross-replica, no replica context; in run a
    replica context with replica id int32 0; merge_call returns to cross-replica."""
    ms = gt.distribute.MirroredStrategy()
    assert ms.num_replicas_in_sync == 1 and ms.cluster_resolver is None
    assert ms.extended.worker_devices == (
        f"/job:localhost/replica:0/task:0/device:{gt.config.default_device().kind.upper()}:0",)
    seen = {}
    with ms.scope() as entered:
        assert entered is ms
        assert gt.distribute.has_strategy() and gt.distribute.in_cross_replica_context()
        assert gt.distribute.get_strategy() is ms and gt.distribute.get_replica_context() is None

        def step(x):
            ctx = gt.distribute.get_replica_context()
            seen["id"] = ctx.replica_id_in_sync_group
            seen["cross"] = gt.distribute.in_cross_replica_context()
            seen["sum"] = ctx.all_reduce(gt.distribute.ReduceOp.SUM, x)
            seen["mean"] = ctx.all_reduce("MEAN", [x, x * 2])
            seen["merge"] = ctx.merge_call(
                lambda s, a: (s is ms, gt.distribute.in_cross_replica_context(), a), args=(3,))
            return x * 2
        r = ms.run(step, args=(gt.constant([1.0, 2.0]),))
    assert not gt.distribute.has_strategy()
    np.testing.assert_allclose(r.numpy(), [2.0, 4.0])
    assert seen["id"].dtype == gt.int32 and int(seen["id"]) == 0 and seen["cross"] is False
    np.testing.assert_allclose(seen["sum"].numpy(), [1.0, 2.0])
    assert isinstance(seen["mean"], list)
    np.testing.assert_allclose(seen["mean"][1].numpy(), [2.0, 4.0])
    assert seen["merge"] == (True, True, 3)
    assert ms.run(lambda a, b=0: a + b, args=(1,), kwargs={"b": 2}) == 3


def test_strategy_reduce_gather_and_local_results():
    """TensorFlow: SUM/MEAN over the one replica; along an axis the sum, or the sum over the
    count (ints: a float64 mean); a list converts to one tensor."""
    ms = gt.distribute.MirroredStrategy()
    r = gt.constant([2.0, 4.0])
    Op = gt.distribute.ReduceOp
    np.testing.assert_allclose(ms.reduce(Op.SUM, r, axis=None).numpy(), [2.0, 4.0])
    assert float(ms.reduce(Op.SUM, r, axis=0)) == 6.0
    assert float(ms.reduce(Op.MEAN, r, axis=0)) == 3.0
    np.testing.assert_allclose(ms.reduce("MEAN", gt.constant([[1.0, 3.0], [2.0, 4.0]]),
                                         axis=1).numpy(), [2.0, 3.0])
    m = ms.reduce(Op.MEAN, gt.constant([1, 2]), axis=0)
    assert m.dtype == gt.float64 and float(m) == 1.5
    m = ms.reduce(Op.MEAN, gt.constant(3), axis=None)
    assert m.dtype == gt.int32 and int(m) == 3
    np.testing.assert_allclose(ms.reduce("sum", [gt.constant([1.0]), gt.constant([2.0])],
                                         axis=0).numpy(), [3.0])
    assert float(ms.reduce("SUM", 3.0, axis=None)) == 3.0
    with pytest.raises(ValueError, match="'PROD' is not a valid ReduceOp"):
        ms.reduce("PROD", gt.constant(1.0), axis=None)
    out = ms.experimental_local_results(r)
    assert isinstance(out, tuple) and len(out) == 1 and out[0] is r
    g = ms.gather([gt.constant([1.0]), gt.constant([2.0])], axis=0)
    assert isinstance(g, list) and float(g[1][0]) == 2.0
    assert Op.from_variable_aggregation(gt.VariableAggregation.MEAN) is Op.MEAN
    with pytest.raises(ValueError, match="Could not convert"):
        Op.from_variable_aggregation(gt.VariableAggregation.NONE)
    assert [o.value for o in Op] == ["SUM", "MEAN"]


def test_strategy_errors_as_tensorflow():
    ms = gt.distribute.MirroredStrategy()
    od = gt.distribute.OneDeviceStrategy("/cpu:0")
    with od.scope():
        with pytest.raises(RuntimeError, match="Mixing different gt.distribute.Strategy"):
            ms.scope().__enter__()
    with ms.scope():
        with ms.scope():                                   # the same one nests
            assert gt.distribute.get_strategy() is ms
    with pytest.raises(RuntimeError, match="requires being in cross-replica context"):
        ms.run(lambda: ms.reduce("SUM", gt.constant(1.0), axis=None))
    with pytest.raises(RuntimeError, match="requires being in cross-replica context"):
        ms.run(lambda: ms.run(lambda: 1))
    with pytest.raises(ValueError, match="Must specify at least one device"):
        gt.distribute.MirroredStrategy([])
    with pytest.raises(ValueError, match="No duplicates allowed"):
        gt.distribute.MirroredStrategy(["/cpu:0", "/cpu:0"])
    with pytest.raises(ValueError, match=r"does not replicate.*2 devices.*/cpu:0, strict:0"):
        gt.distribute.MirroredStrategy(["/cpu:0", "strict:0"])
    with pytest.raises(ValueError, match="a list of device names"):
        gt.distribute.MirroredStrategy("/cpu:0")
    with pytest.raises(TypeError, match="OneDeviceStrategy: device must be"):
        gt.distribute.OneDeviceStrategy(["/cpu:0"])
    with pytest.raises(ValueError, match="Please provide a TPU Name"):
        gt.distribute.cluster_resolver.TPUClusterResolver()
    with pytest.raises(ValueError, match="num_packs >= 0"):
        gt.distribute.NcclAllReduce(num_packs=-1)
    assert gt.distribute.MirroredStrategy(
        cross_device_ops=gt.distribute.HierarchicalCopyAllReduce()).num_replicas_in_sync == 1


def test_default_strategy_scope_cannot_nest_in_another():
    ms = gt.distribute.MirroredStrategy()
    default = gt.distribute.get_strategy()
    with default.scope() as d:
        assert d is default and not gt.distribute.has_strategy()
        assert not gt.distribute.in_cross_replica_context()
        with ms.scope():
            assert gt.distribute.get_strategy() is ms
    with ms.scope():
        with pytest.raises(RuntimeError, match="Must not nest gt.distribute.Strategy scopes"):
            default.scope().__enter__()


def test_one_device_strategy_places_variables_steps_and_batches():
    strict = gt.get_device("strict:0")
    s = gt.distribute.OneDeviceStrategy("strict:0")
    assert s.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:STRICT:0",)
    with s.scope():
        v = gt.Variable(1.0)
        assert v.device is strict
        assert gt.distribute.get_replica_context() is None
    out = s.run(lambda: gt.constant(2.0) + 1.0)
    assert out.device is strict
    assert s.run(lambda: gt.distribute.get_replica_context().replica_id_in_sync_group).device \
        is strict
    ds = gt.data.Dataset.from_tensor_slices(np.arange(6.0)).batch(4)
    dist = s.experimental_distribute_dataset(ds)
    batches = list(dist)
    assert [b.device for b in batches] == [strict, strict]
    np.testing.assert_allclose(batches[1].numpy(), [4.0, 5.0])
    assert isinstance(dist, gt.data.Dataset)


def test_distributed_datasets_and_input_context():
    """TensorFlow: the same batches; dataset_fn gets InputContext(1, 0, 1)."""
    ms = gt.distribute.MirroredStrategy()
    ds = gt.data.Dataset.from_tensor_slices(np.arange(10.0)).batch(4)
    dist = ms.experimental_distribute_dataset(ds)
    got = [b.numpy().tolist() for b in dist]
    assert got == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0]]
    assert dist.element_spec.shape.as_list() == [None]
    np.testing.assert_allclose(iter(dist).get_next().numpy(), [0.0, 1.0, 2.0, 3.0])
    seen = []

    def dataset_fn(ctx):
        seen.append((ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync,
                     ctx.get_per_replica_batch_size(8)))
        return gt.data.Dataset.from_tensor_slices(np.arange(4.0)).batch(2)
    assert [b.numpy().tolist() for b in ms.distribute_datasets_from_function(dataset_fn)] == \
        [[0.0, 1.0], [2.0, 3.0]]
    assert seen == [(1, 0, 1, 8)]
    with pytest.raises(TypeError, match="expected a gt.data.Dataset, got list"):
        ms.experimental_distribute_dataset([1, 2])
    with pytest.raises(TypeError, match="dataset_fn must return a gt.data.Dataset"):
        ms.distribute_datasets_from_function(lambda ctx: [1])
    ic = gt.distribute.InputContext(2, 1, 4)
    assert ic.get_per_replica_batch_size(16) == 4
    assert str(ic) == "gt.distribute.InputContext(input pipeline id 1, total: 2)"
    with pytest.raises(ValueError, match="`global_batch_size` 15 is not divisible by "
                                         "`num_replicas_in_sync` 4"):
        ic.get_per_replica_batch_size(15)
    opts = gt.distribute.InputOptions()
    assert opts.experimental_fetch_to_device is True
    assert opts.experimental_replication_mode is gt.distribute.InputReplicationMode.PER_WORKER
    assert opts.experimental_per_replica_buffer_size == 1
    with pytest.raises(NotImplementedError, match="PER_REPLICA"):
        ms.experimental_distribute_dataset(ds, gt.distribute.InputOptions(
            experimental_replication_mode=gt.distribute.InputReplicationMode.PER_REPLICA))


def test_experimental_set_strategy_and_extended():
    ms = gt.distribute.MirroredStrategy()
    gt.distribute.experimental_set_strategy(ms)
    try:
        assert gt.distribute.get_strategy() is ms and gt.distribute.has_strategy()
        assert gt.distribute.in_cross_replica_context()
    finally:
        gt.distribute.experimental_set_strategy(None)
    assert not gt.distribute.has_strategy()
    v = gt.Variable(1.0)
    ms.extended.update(v, lambda var, d: var.assign_add(d), args=(2.0,))
    assert float(v) == 3.0
    assert float(ms.extended.reduce_to("SUM", gt.constant(1.0), v)) == 1.0
    assert [float(t) for t in ms.extended.batch_reduce_to("SUM", [(gt.constant(1.0), v)])] == \
        [1.0]
    assert ms.extended.call_for_each_replica(lambda x: x * 2, args=(2,)) == 4
    assert ms.extended.value_container(3) == 3
    assert ms.extended.should_checkpoint and ms.extended.experimental_should_init
    assert copy.deepcopy(ms) is ms


def test_compute_average_loss_and_scale_regularization_loss():
    """TensorFlow: [1, 2, 3] over 4 is 1.5, over its own batch 2.0; weights [1, 0, 2]:
    2.3333333; scalar weight 2 over 2: 6.0; a zero batch size: 0.0."""
    cal = gt.distribute.compute_average_loss
    loss = gt.constant([1.0, 2.0, 3.0])
    assert float(cal(loss, global_batch_size=4)) == 1.5
    assert float(cal(loss)) == 2.0
    np.testing.assert_allclose(float(cal(loss, sample_weight=gt.constant([1.0, 0.0, 2.0]))),
                               2.3333333, rtol=1e-6)
    assert float(cal(loss, sample_weight=2.0, global_batch_size=2)) == 6.0
    assert float(cal(loss, global_batch_size=0)) == 0.0
    assert float(cal(gt.ones((2, 3)))) == 3.0
    assert cal(gt.constant([1.0, 2.0], gt.float64), global_batch_size=gt.constant(4)).dtype == \
        gt.float64
    with pytest.raises(TypeError, match="global_batch_size must be an integer"):
        cal(loss, global_batch_size=4.0)
    with pytest.raises(gt.errors.InvalidArgumentError, match="non-negative"):
        cal(loss, global_batch_size=-1)
    with pytest.raises(ValueError, match="Expected a tensor with at least rank 1"):
        cal(gt.constant(3.0))
    srl = gt.distribute.scale_regularization_loss
    assert float(srl(gt.constant(3.0))) == 3.0
    assert float(srl([gt.constant(3.0), gt.constant(2.0)])) == 5.0
    assert float(srl(gt.ones((2, 2)))) == 4.0
    assert float(srl([gt.ones(2), gt.ones(2)])) == 4.0
    empty = srl([])
    assert empty.dtype == gt.float32 and float(empty) == 0.0
    ms = gt.distribute.MirroredStrategy()
    with ms.scope():
        with pytest.raises(RuntimeError, match="`compute_average_loss` in cross replica"):
            cal(loss)
        assert float(cal(loss, global_batch_size=4)) == 1.5
        with pytest.raises(RuntimeError, match="`scale_regularization_loss` in cross replica"):
            srl(3.0)
        assert float(ms.run(lambda: cal(loss))) == 2.0
        assert float(ms.run(lambda: srl([1.0, 2.0]))) == 3.0


def _tutorial_model(regularized=True):
    reg = keras.regularizers.L2(0.01) if regularized else None
    model = keras.Sequential([
        keras.Input((3,)),
        keras.layers.Dense(4, activation="relu", kernel_regularizer=reg),
        keras.layers.Dense(3)])
    model.set_weights([np.linspace(-0.5, 0.5, 12, dtype=np.float32).reshape(3, 4),
                       np.full(4, 0.1, np.float32),
                       np.linspace(0.3, -0.3, 12, dtype=np.float32).reshape(4, 3),
                       np.zeros(3, np.float32)])
    return model


_X = np.arange(24, dtype=np.float32).reshape(8, 3) / 10.0
_Y = np.array([0, 1, 2, 1, 0, 2, 1, 0])


def test_custom_training_loop_tutorial_under_mirrored_strategy():
    """The "Custom training with tf.distribute.Strategy" loop; TensorFlow's mean losses per
    epoch 1.1052141, 1.1033769 and these weights afterwards."""
    global_batch = 4
    strategy = gt.distribute.MirroredStrategy()
    with strategy.scope():
        model = _tutorial_model()
        loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                 reduction="none")

        def compute_loss(labels, predictions, model_losses):
            per_example_loss = loss_object(labels, predictions)
            loss = gt.distribute.compute_average_loss(per_example_loss,
                                                      global_batch_size=global_batch)
            if model_losses:
                loss += gt.distribute.scale_regularization_loss(gt.add_n(model_losses))
            return loss
        optimizer = keras.optimizers.SGD(learning_rate=0.1)
        accuracy = keras.metrics.SparseCategoricalAccuracy()
    dist = strategy.experimental_distribute_dataset(
        gt.data.Dataset.from_tensor_slices((_X, _Y)).batch(global_batch))

    def train_step(inputs):
        images, labels = inputs
        with gt.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = compute_loss(labels, predictions, model.losses)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        accuracy.update_state(labels, predictions)
        return loss

    @gt.function
    def distributed_train_step(inputs):
        per_replica = strategy.run(train_step, args=(inputs,))
        return strategy.reduce(gt.distribute.ReduceOp.SUM, per_replica, axis=None)

    losses = []
    for _ in range(2):
        total, n = 0.0, 0
        for batch in dist:
            total += distributed_train_step(batch)
            n += 1
        losses.append(float(total / n))
        assert float(accuracy.result()) == 0.375
        accuracy.reset_state()
    np.testing.assert_allclose(losses, [1.1052141189575195, 1.103376865386963], rtol=1e-5)
    w = model.get_weights()
    np.testing.assert_allclose(w[1], [0.102595, 0.099659, 0.10172, 0.101563], atol=2e-6)
    np.testing.assert_allclose(w[3], [0.009828, 0.014339, -0.024167], atol=2e-6)
    np.testing.assert_allclose(w[0][0], [-0.496043, -0.407631, -0.313645, -0.223723], atol=2e-6)


def test_keras_fit_under_strategy_scope_records_the_strategy():
    """TensorFlow: model.distribute_strategy is the scope's strategy; fit gives losses
    1.093411, 1.09164, then 1.090177 on the distributed dataset; evaluate 1.086439."""
    strategy = gt.distribute.MirroredStrategy()
    with strategy.scope():
        model = _tutorial_model(regularized=False)
        model.compile(optimizer=keras.optimizers.SGD(0.1),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    assert model.distribute_strategy is strategy
    assert copy.deepcopy(strategy) is strategy
    plain = keras.Sequential([keras.layers.Dense(2)])
    assert plain.distribute_strategy is gt.distribute.get_strategy()
    h = model.fit(_X, _Y, batch_size=4, epochs=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(h.history["loss"], [1.093411, 1.09164], atol=2e-6)
    dist = strategy.experimental_distribute_dataset(
        gt.data.Dataset.from_tensor_slices((_X, _Y)).batch(4))
    h = model.fit(dist, epochs=1, verbose=0)
    np.testing.assert_allclose(h.history["loss"], [1.090177], atol=2e-6)
    np.testing.assert_allclose(model.evaluate(_X, _Y, verbose=0), [1.086439, 0.375], atol=2e-6)


# --- gt.config ----------------------------------------------------------------------------------

def test_physical_and_logical_devices_are_tensorflow_records():
    pd = gt.config.list_physical_devices()
    assert pd[0] == gt.config.PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
    assert pd[0]._fields == ("name", "device_type")
    assert repr(pd[0]) == "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')"
    assert pd[0] == ("/physical_device:CPU:0", "CPU")
    assert pd[0] == gt.get_device("cpu") and gt.get_device("cpu") == pd[0]
    assert not (pd[0] != gt.get_device("cpu"))
    ld = gt.config.list_logical_devices("CPU")
    assert ld == [gt.config.LogicalDevice(name="/device:CPU:0", device_type="CPU")]
    with gt.device(ld[0].name):
        assert gt.constant(1.0).device is gt.get_device("cpu")
    assert gt.config.get_visible_devices("CPU") == [pd[0]]
    assert gt.config.experimental.list_logical_devices("CPU") == ld
    cfg = gt.config.LogicalDeviceConfiguration(memory_limit=1024)
    assert cfg._fields == ("memory_limit", "experimental_priority",
                           "experimental_device_ordinal")
    assert cfg.memory_limit == 1024 and cfg.experimental_priority is None
    assert gt.config.experimental.VirtualDeviceConfiguration is \
        gt.config.LogicalDeviceConfiguration


def test_gpu_records_name_gpus_with_tensorflow_numbering(monkeypatch):
    fake = [backend.Device("gpu", 0), backend.Device("gpu", 1)]
    monkeypatch.setattr(backend, "_gpus", fake)
    monkeypatch.setattr(backend, "_hidden", set())
    monkeypatch.setattr(backend, "_default", None)
    monkeypatch.delenv("GRADTAPE_DEVICE", raising=False)
    gpus = gt.config.list_physical_devices("GPU")
    assert [g.name for g in gpus] == ["/physical_device:GPU:0", "/physical_device:GPU:1"]
    gt.config.set_visible_devices(gpus[1], "GPU")
    assert gt.config.get_visible_devices("GPU") == [gpus[1]]
    assert gt.config.list_logical_devices("GPU") == [
        gt.config.LogicalDevice("/device:GPU:0", "GPU")]
    assert gt.config.list_logical_devices("GPU")[0] == fake[1]     # the first visible one
    assert gt.config.list_physical_devices("GPU")[1] == fake[1]    # CUDA's numbering
    gt.config.experimental.set_memory_growth(gpus[1], True)
    assert gt.config.experimental.get_memory_growth(gpus[1]) is True


class _Pool:
    def __init__(self):
        self.limits = []

    def set_limit(self, size=None, fraction=None):
        self.limits.append(size)


def test_logical_device_configuration_caps_a_gpu_memory_pool(monkeypatch):
    pool = _Pool()
    fake = backend.Device("gpu", 0)
    fake.xp = type("FakeCupy", (), {"get_default_memory_pool": staticmethod(lambda: pool)})
    monkeypatch.setattr(backend, "_gpus", [fake])
    monkeypatch.setattr(backend, "_hidden", set())
    monkeypatch.setattr(gt.config, "_LOGICAL_CONFIGS", {})
    gpu = gt.config.list_physical_devices("GPU")[0]
    assert gt.config.get_logical_device_configuration(gpu) is None
    cfg = [gt.config.LogicalDeviceConfiguration(memory_limit=64)]
    gt.config.set_logical_device_configuration(gpu, cfg)
    assert pool.limits == [64 << 20]
    assert gt.config.get_logical_device_configuration(gpu) == cfg
    assert gt.config.experimental.get_virtual_device_configuration(gpu) == cfg
    gt.config.experimental.set_virtual_device_configuration(
        gpu, [gt.config.LogicalDeviceConfiguration()])
    assert pool.limits == [64 << 20, 0]                            # (no cap)
    with pytest.raises(ValueError, match="does not split gpu:0 into 2 logical devices"):
        gt.config.set_logical_device_configuration(
            gpu, [gt.config.LogicalDeviceConfiguration(100)] * 2)
    with pytest.raises(ValueError, match="memory_limit must be a positive number"):
        gt.config.set_logical_device_configuration(
            gpu, [gt.config.LogicalDeviceConfiguration(-5)])
    assert pool.limits == [64 << 20, 0]


def test_logical_device_configuration_on_the_cpu(monkeypatch):
    """TensorFlow: CPU configurations are recorded; a memory limit there is refused; a
    string is an unrecognized device; non-configurations fail."""
    monkeypatch.setattr(gt.config, "_LOGICAL_CONFIGS", {})
    cpu = gt.config.list_physical_devices("CPU")[0]
    assert gt.config.get_logical_device_configuration(cpu) is None
    two = [gt.config.LogicalDeviceConfiguration()] * 2
    gt.config.set_logical_device_configuration(cpu, two)
    assert gt.config.get_logical_device_configuration(cpu) == two
    with pytest.raises(ValueError, match="Setting memory limit on CPU virtual devices is "
                                         "currently not supported"):
        gt.config.set_logical_device_configuration(
            cpu, [gt.config.LogicalDeviceConfiguration(memory_limit=100)])
    with pytest.raises(ValueError, match="Unrecognized device: 'CPU:0'"):
        gt.config.set_logical_device_configuration("CPU:0", two)
    with pytest.raises(ValueError, match="Unrecognized device"):
        gt.config.get_logical_device_configuration("CPU:0")
    with pytest.raises(TypeError, match="expected LogicalDeviceConfiguration"):
        gt.config.set_logical_device_configuration(cpu, [1])
    with pytest.raises(TypeError):
        gt.config.set_logical_device_configuration(cpu, None)
    with pytest.raises(ValueError, match="memory growth applies to GPUs"):
        gt.config.experimental.set_memory_growth(cpu, True)


def test_soft_placement_eager_switches_threads_and_optimizer(monkeypatch):
    """TensorFlow: soft placement on by default, stored as a bool; thread counts 0 until
    set; set_jit(True/"autoclustering") gives "autoclustering", anything else ""; the
    experimental options list what was set plus the two plain booleans."""
    monkeypatch.setattr(gt.config, "_SOFT_PLACEMENT", [True])
    monkeypatch.setattr(gt.config, "_THREADS", {"intra": 0, "inter": 0})
    monkeypatch.setattr(gt.config, "_JIT", [False])
    monkeypatch.setattr(gt.config, "_OPTIONS", {})
    monkeypatch.setattr(gt.config, "_EAGER", [False])
    c = gt.config
    assert c.get_soft_device_placement() is True
    c.set_soft_device_placement(0)
    assert c.get_soft_device_placement() is False
    assert c.experimental_functions_run_eagerly() is False
    c.experimental_run_functions_eagerly(True)
    assert c.experimental_functions_run_eagerly() is True and c.functions_run_eagerly() is True
    t = c.threading
    assert (t.get_intra_op_parallelism_threads(), t.get_inter_op_parallelism_threads()) == (0, 0)
    t.set_intra_op_parallelism_threads(2)
    t.set_inter_op_parallelism_threads(3)
    assert (t.get_intra_op_parallelism_threads(), t.get_inter_op_parallelism_threads()) == (2, 3)
    with pytest.raises(TypeError, match="non-negative int"):
        t.set_intra_op_parallelism_threads("a")
    o = c.optimizer
    assert o.get_jit() == "" and o.get_experimental_options() == {
        "disable_model_pruning": False, "disable_meta_optimizer": False}
    o.set_jit(True)
    assert o.get_jit() == "autoclustering"
    o.set_jit("foo")
    assert o.get_jit() == ""
    o.set_jit("autoclustering")
    assert o.get_jit() == "autoclustering"
    o.set_experimental_options({"layout_optimizer": False, "constant_folding": True})
    o.set_experimental_options({"disable_meta_optimizer": True, "bogus": True})
    assert o.get_experimental_options() == {
        "layout_optimizer": False, "constant_folding": True, "disable_model_pruning": False,
        "disable_meta_optimizer": True}
    assert list(o.get_experimental_options()) == [
        "layout_optimizer", "constant_folding", "disable_model_pruning",
        "disable_meta_optimizer"]


# --- gt.debugging ---------------------------------------------------------------------------

def test_debugging_switches(monkeypatch):
    monkeypatch.setattr(gt.debugging, "_SWITCHES",
                        {"log_device_placement": False, "traceback_filtering": True})
    d = gt.debugging
    assert d.get_log_device_placement() is False
    d.set_log_device_placement(1)
    assert d.get_log_device_placement() is True
    assert d.is_traceback_filtering_enabled() is True
    d.disable_traceback_filtering()
    assert d.is_traceback_filtering_enabled() is False
    d.enable_traceback_filtering()
    assert d.is_traceback_filtering_enabled() is True


def test_assert_same_float_dtype_as_tensorflow():
    f = gt.debugging.assert_same_float_dtype
    assert f([gt.constant(1.0), gt.constant(2.0)]) is gt.float32
    assert f() is gt.float32 and f([]) is gt.float32
    assert f(None, gt.float64) is gt.float64
    assert f([gt.constant(1.0, gt.float16), None, gt.Variable(1.0, dtype=gt.float16)]) == \
        gt.float16
    with pytest.raises(ValueError, match=r"type=<dtype: 'float64'>, must be of the same type "
                                         r"\(<dtype: 'float32'>\) as gt.Tensor\(1.0"):
        f([gt.constant(1.0), gt.constant(2.0, gt.float64)])
    with pytest.raises(ValueError, match=r"type=<dtype: 'float32'>, must be of the same type "
                                         r"\(<dtype: 'float16'>\) as Variable:0\.$"):
        f([gt.Variable(1.0, dtype=gt.float16), gt.constant(1.0)])
    with pytest.raises(ValueError, match=r"must be of the same type \(<dtype: 'float64'>\)\.$"):
        f([gt.constant(1.0)], gt.float64)
    with pytest.raises(ValueError, match="Expected floating point type, got <dtype: 'int32'>"):
        f([gt.constant(1)])
    with pytest.raises(ValueError, match="Expected floating point type"):
        f(None, gt.int32)


# --- top-level helpers ----------------------------------------------------------------------

def test_saturate_cast_values_as_tensorflow():
    sc = gt.saturate_cast
    with np.errstate(invalid="ignore"):
        assert sc(gt.constant([-300.0, 1.5, 300.0, np.inf]), gt.uint8).numpy().tolist() == \
            [0, 1, 255, 255]
    assert sc(gt.constant([-300.0, 1.7, 300.0]), gt.int8).numpy().tolist() == [-128, 1, 127]
    assert sc(gt.constant([-1e10, 2.5, 1e10]), gt.int32).numpy().tolist() == \
        [-2147483648, 2, 2147483520]
    f32 = np.finfo(np.float32).max
    np.testing.assert_array_equal(sc(gt.constant([-1e40, 2.5, 1e40], gt.float64),
                                     gt.float32).numpy(), np.float32([-f32, 2.5, f32]))
    np.testing.assert_array_equal(sc(gt.constant([-1e5, 2.5, 1e5]), gt.float16).numpy(),
                                  [-65504.0, 2.5, 65504.0])
    out = sc(gt.constant([np.nan, np.inf, -np.inf]), gt.float64).numpy()
    assert np.isnan(out[0]) and out[1:].tolist() == [float(f32), -float(f32)]
    assert sc(gt.constant([-300, 1, 300]), gt.uint8).numpy().tolist() == [0, 1, 255]
    assert sc(gt.constant([-300, 1, 300], gt.int64), gt.int8).numpy().tolist() == [-128, 1, 127]
    assert sc(gt.constant([3, 255], gt.uint8), gt.int8).numpy().tolist() == [3, 127]
    assert sc(gt.constant([-3, 300], gt.int32), gt.float16).numpy().tolist() == [-3.0, 300.0]
    assert sc(gt.constant([1.5, 3e9]), gt.uint32).numpy().tolist() == [1, 3000000000]
    assert sc([1.5, 300.0], gt.uint8).numpy().tolist() == [1, 255]
    # (saturated at the largest float32 below 2**63 and 2**64, which cast without overflow)
    assert sc(gt.constant([-1.5, 1e20]), gt.int64).numpy().tolist() == \
        [-1, 9223371487098961920]
    assert sc(gt.constant([-1.5, 1e20]), gt.uint64).numpy().tolist() == \
        [0, 18446742974197923840]
    with pytest.raises(TypeError, match="the value's dtype bool has no range"):
        sc(gt.constant([True]), gt.int32)
    with pytest.raises(TypeError, match="the target dtype bool has no range"):
        sc(gt.constant([1.0]), gt.bool)


def test_saturate_cast_gradient_is_the_clip_and_cast():
    """TensorFlow: 1 inside the range, 0 where it saturated."""
    x = gt.Variable([-300.0, 1.5, 300.0])
    with gt.GradientTape(persistent=True) as g:
        inside = gt.reduce_sum(gt.cast(gt.saturate_cast(x, gt.float16), gt.float32))
        clipped = gt.reduce_sum(gt.cast(gt.saturate_cast(x * 1e5, gt.float16), gt.float32))
    assert g.gradient(inside, x).numpy().tolist() == [1.0, 1.0, 1.0]
    assert g.gradient(clipped, x).numpy().tolist() == [0.0, 0.0, 0.0]


def test_broadcast_shapes_and_parallel_stack():
    assert gt.broadcast_static_shape(gt.TensorShape([2, 1, 3]), gt.TensorShape([4, 1])) == \
        (2, 4, 3)
    assert gt.broadcast_static_shape(gt.TensorShape([None, 1, 3]),
                                     gt.TensorShape([4, 1])).as_list() == [None, 4, 3]
    assert gt.broadcast_static_shape(gt.TensorShape(None), gt.TensorShape([2])).rank is None
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting.*Received: "
                                         r"\(2, 3\) and \(4, 1\)"):
        gt.broadcast_static_shape(gt.TensorShape([2, 3]), gt.TensorShape([4, 1]))
    s = gt.broadcast_dynamic_shape([2, 1, 3], [4, 1])
    assert s.dtype == gt.int32 and s.numpy().tolist() == [2, 4, 3]
    s = gt.broadcast_dynamic_shape(gt.constant([2, 1, 3], gt.int64), gt.constant([4, 1], gt.int64))
    assert s.dtype == gt.int64 and s.numpy().tolist() == [2, 4, 3]
    assert gt.broadcast_dynamic_shape(gt.constant([], gt.int32), [3]).numpy().tolist() == [3]
    with pytest.raises(gt.errors.InvalidArgumentError, match="incompatible shapes"):
        gt.broadcast_dynamic_shape([2, 3], [4, 1])
    with pytest.raises(gt.errors.InvalidArgumentError, match="int64"):
        gt.broadcast_dynamic_shape(gt.constant([2, 1], gt.int64), gt.constant([4, 1], gt.int32))
    p = gt.parallel_stack([gt.constant([1, 2]), gt.constant([3, 4])])
    assert p.numpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ValueError):
        gt.parallel_stack([gt.constant([1, 2]), gt.constant([3, 4, 5])])


def test_no_gradient_declares_an_op_non_differentiable():
    from gradtape.registry import REGISTRY, apply, defop
    name = "surface_test_no_rule"
    op = defop(name, lambda xp, x: x * 2)        # an op without a gradient rule
    try:
        x = gt.Variable([1.0, 2.0])
        with gt.GradientTape() as g:
            y = apply(op, (x,))
        with pytest.raises(LookupError, match="no gradient rule is registered"):
            g.gradient(y, x)
        gt.no_gradient(name)
        assert op.nondiff
        with gt.GradientTape() as g:
            y = apply(op, (x,))
        assert g.gradient(y, x) is None
    finally:
        del REGISTRY[name]
    with pytest.raises(KeyError, match="Registering two gradient with name 'square'"):
        gt.no_gradient("square")
    with pytest.raises(TypeError, match="op_type must be a string"):
        gt.no_gradient(3)
    with pytest.raises(LookupError, match="no op named 'NoSuchOp'"):
        gt.no_gradient("NoSuchOp")


def test_init_scope_pauses_tapes_and_eager_helpers():
    """TensorFlow: what runs in init_scope is not recorded (gradient None); eager."""
    v = gt.Variable(2.0)
    with gt.GradientTape(persistent=True) as g:
        with gt.init_scope():
            y = v * v
            assert gt.executing_eagerly() and not gt.inside_function()
        z = v * v
    assert g.gradient(y, v) is None and float(g.gradient(z, v)) == 4.0
    assert gt.inside_function() is False
    log = gt.get_logger()
    assert log.name == "gradtape" and gt.get_logger() is log
    assert gt.version.VERSION == gt.__version__
    assert isinstance(gt.version.GIT_VERSION, str) and gt.version.COMPILER_VERSION


def test_variable_enums_and_unsigned_dtypes():
    assert [(m.name, m.value) for m in gt.VariableAggregation] == [
        ("NONE", 0), ("SUM", 1), ("MEAN", 2), ("ONLY_FIRST_REPLICA", 3)]
    assert [(m.name, m.value) for m in gt.VariableSynchronization] == [
        ("AUTO", 0), ("NONE", 1), ("ON_WRITE", 2), ("ON_READ", 3)]
    v = gt.Variable(1.0, aggregation=gt.VariableAggregation.MEAN,
                    synchronization=gt.VariableSynchronization.ON_READ)
    assert float(v) == 1.0
    for dt, top in ((gt.uint16, 65535), (gt.uint32, 4294967295), (gt.uint64, 2 ** 64 - 1)):
        assert gt.as_dtype(dt.name) is dt and dt.max == top and dt.min == 0
        x = gt.constant([1, 2, 3], dtype=dt)
        assert x.dtype == dt and (x * 2).numpy().tolist() == [2, 4, 6]
        assert gt.reduce_sum(x).dtype == dt


# --- Keras 3's top level --------------------------------------------------------------------------

def test_keras_top_level_aliases():
    assert keras.Loss is gt.losses.Loss and keras.Metric is gt.metrics.Metric
    assert keras.Optimizer is gt.optimizers.Optimizer
    assert keras.Initializer is gt.initializers.Initializer
    assert keras.Regularizer is gt.regularizers.Regularizer
    assert keras.InputSpec is gt.layers.InputSpec
    assert keras.DTypePolicy is gt.keras.mixed_precision.DTypePolicy
    from gradtape.keras import random as kr, config as kc   # importable submodules
    assert kr is keras.random and kc is keras.config


_XA = np.array([[-3.0, -1.5, -1.0, -0.4, 0.0, 0.3, 0.5, 1.0, 2.5, 4.0]], np.float32)
_ACT_VALUES = {                          # Keras 3's, on _XA
    "celu": [-0.950213, -0.77687, -0.632121, -0.32968, 0.0, 0.3, 0.5, 1.0, 2.5, 4.0],
    "glu": [-1.723328, -0.933689, -0.731059, -0.369657, 0.0],
    "hard_tanh": [-1.0, -1.0, -1.0, -0.4, 0.0, 0.3, 0.5, 1.0, 1.0, 1.0],
    "log_sigmoid": [-3.048587, -1.701413, -1.313262, -0.913015, -0.693147, -0.554355,
                    -0.474077, -0.313262, -0.07889, -0.01815],
    "soft_shrink": [-2.5, -1.0, -0.5, 0.0, 0.0, 0.0, 0.0, 0.5, 2.0, 3.5],
    "hard_shrink": [-3.0, -1.5, -1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.5, 4.0],
    "tanh_shrink": [-2.004945, -0.594852, -0.238406, -0.020051, 0.0, 0.008687, 0.037883,
                    0.238406, 1.513386, 3.000671],
    "squareplus": [0.302776, 0.5, 0.618034, 0.819804, 1.0, 1.161187, 1.280776, 1.618034,
                   2.850781, 4.236068],
    "sparse_plus": [0.0, 0.0, 0.0, 0.09, 0.25, 0.4225, 0.5625, 1.0, 2.5, 4.0],
    "sparse_sigmoid": [0.0, 0.0, 0.0, 0.3, 0.5, 0.65, 0.75, 1.0, 1.0, 1.0],
    "sparsemax": [0.0] * 9 + [1.0],
}


def test_extra_activations_values(device):
    A = keras.activations
    for name, want in _ACT_VALUES.items():
        got = getattr(A, name)(gt.constant(_XA))
        assert got.device is device
        np.testing.assert_allclose(got.numpy()[0], want, atol=2e-6, err_msg=name)
    x = gt.constant(_XA)
    np.testing.assert_allclose(A.celu(x, alpha=0.5).numpy()[0], [
        -0.498761, -0.475106, -0.432332, -0.275336, 0.0, 0.3, 0.5, 1.0, 2.5, 4.0], atol=2e-6)
    np.testing.assert_allclose(A.soft_shrink(x, threshold=1.0).numpy()[0],
                               [-2.0, -0.5, 0, 0, 0, 0, 0, 0, 1.5, 3.0])
    np.testing.assert_allclose(A.hard_shrink(x, 1.0).numpy()[0],
                               [-3.0, -1.5, 0, 0, 0, 0, 0, 0, 2.5, 4.0])
    np.testing.assert_allclose(A.squareplus(x, b=1).numpy()[0], [
        0.081139, 0.151388, 0.207107, 0.338516, 0.5, 0.672015, 0.809017, 1.207107, 2.596291,
        4.061553], atol=2e-6)
    np.testing.assert_allclose(A.threshold(x, 0.4, -2.0).numpy()[0],
                               [-2, -2, -2, -2, -2, -2, 0.5, 1.0, 2.5, 4.0])
    np.testing.assert_allclose(A.glu(gt.reshape(x, (2, 5)), axis=0).numpy()[0],
                               _ACT_VALUES["glu"], atol=2e-6)
    with pytest.raises(ValueError, match=r"axis size must be divisible by 2. Received: "
                                         r"x.shape=\(2, 3\) with axis=-1"):
        A.glu(gt.ones((2, 3)))


def test_sparsemax_projects_onto_the_simplex():
    """Keras 3's one-element supports ([1, 2, 3] -> [0, 0, 1]); with larger supports the
    outputs sum to 1 (Martins & Astudillo's threshold; Keras 3.15's own implementation sums
    the cumulative sums instead and returns [0, 0, 0] for [3, 3.1, -2])."""
    y = gt.constant([[1.0, 2.0, 3.0], [3.0, 3.1, -2.0], [0.0, 0.5, 1.0]])
    out = keras.activations.sparsemax(y).numpy()
    np.testing.assert_allclose(out, [[0, 0, 1], [0.45, 0.55, 0], [0, 0.25, 0.75]], atol=1e-6)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(keras.activations.sparsemax(y[:, :2], axis=0).numpy(),
                               [[0, 0], [1, 1], [0, 0]], atol=1e-6)
    x = gt.Variable([[0.1, 0.9, 0.5, -1.0]])
    with gt.GradientTape() as g:
        s = gt.reduce_sum(keras.activations.sparsemax(x) * gt.constant([[1.0, 2.0, 3.0, 4.0]]))
    # support {0.9, 0.5}: the gradient is g - mean(g over the support) there, 0 elsewhere
    np.testing.assert_allclose(g.gradient(s, x).numpy(), [[0.0, -0.5, 0.5, 0.0]], atol=1e-6)


_XG = np.array([[-3.0, -1.5, -0.7, -0.4, 0.1, 0.3, 0.6, 0.9, 2.5, 4.0]], np.float32)
_WG = np.linspace(0.5, 1.5, 10).astype(np.float32).reshape(1, 10)
_ACT_GRADS = {                           # TensorFlow's d sum(act(x) * w) / dx on _XG
    "celu": [0.001239, 0.030425, 0.178098, 0.374441, 0.944444, 1.055556, 1.166667, 1.277778,
             1.388889, 1.5],
    "glu": [0.287221, 0.394568, 0.513464, 0.770118, 0.927457, -0.366687, -0.209719, -0.103892,
            -0.023368, 0.001668],
    "hard_tanh": [0.0, 0.0, 0.722222, 0.833333, 0.944444, 1.055556, 1.166667, 1.277778, 0, 0],
    "log_sigmoid": [0.476287, 0.499629, 0.48258, 0.498906, 0.448631, 0.4492, 0.413401,
                    0.369342, 0.105359, 0.026979],
    "soft_shrink": [0.5, 0.611111, 0.722222, 0, 0, 0, 1.166667, 1.277778, 1.388889, 1.5],
    "hard_shrink": [0.5, 0.611111, 0.722222, 0, 0, 0, 1.166667, 1.277778, 1.388889, 1.5],
    "tanh_shrink": [0.495067, 0.500679, 0.263799, 0.120301, 0.009382, 0.089578, 0.336493,
                    0.655606, 1.351955, 1.497988],
    "squareplus": [0.041987, 0.122222, 0.241818, 0.334952, 0.495804, 0.606069, 0.750953,
                   0.901066, 1.236714, 1.42082],
    "sparse_plus": [0.0, 0.0, 0.108333, 0.25, 0.519444, 0.686111, 0.933333, 1.213889,
                    1.388889, 1.5],
    "sparse_sigmoid": [0.0, 0.0, 0.361111, 0.416667, 0.472222, 0.527778, 0.583333, 0.638889,
                       0.0, 0.0],
    "threshold": [0.0, 0.0, 0.0, 0.0, 0.0, 1.055556, 1.166667, 1.277778, 1.388889, 1.5],
    "sparsemax": [0.0] * 10,
}


def test_extra_activations_gradients(device):
    A = keras.activations
    calls = {"celu": lambda x: A.celu(x, alpha=0.5),
             "threshold": lambda x: A.threshold(x, 0.2, -1.0)}
    for name, want in _ACT_GRADS.items():
        fn = calls.get(name, getattr(A, name))
        x = gt.Variable(_XG)
        with gt.GradientTape() as g:
            y = fn(x)
            s = gt.reduce_sum(y * gt.constant(_WG[:, :y.shape[1]]))
        np.testing.assert_allclose(g.gradient(s, x).numpy()[0], want, atol=3e-6, err_msg=name)


def test_extra_activations_by_name_in_layers_and_configs():
    A = keras.activations
    for name in ("celu", "glu", "hard_tanh", "log_sigmoid", "soft_shrink", "hard_shrink",
                 "tanh_shrink", "squareplus", "sparse_plus", "sparse_sigmoid", "sparsemax"):
        fn = A.get(name)
        assert fn.__name__ == name and A.serialize(fn) == name and fn is getattr(A, name)
        assert name in A.names()
    layer = keras.layers.Dense(4, activation="celu")
    assert layer.get_config()["activation"] == "celu"
    clone = keras.layers.Dense.from_config(layer.get_config())
    assert clone.activation is A.celu
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="sparse_plus")])
    again = keras.models.model_from_json(model.to_json())
    assert again.layers[0].activation is A.sparse_plus


def test_initializer_aliases_and_deterministic_values():
    I = keras.initializers
    assert I.IdentityInitializer is I.Identity and I.identity is I.Identity
    assert I.OrthogonalInitializer is I.Orthogonal and I.orthogonal is I.Orthogonal
    assert I.variance_scaling is I.VarianceScaling
    for name, cls in (("identity", I.Identity), ("orthogonal", I.Orthogonal),
                      ("variance_scaling", I.VarianceScaling),
                      ("IdentityInitializer", I.Identity),
                      ("OrthogonalInitializer", I.Orthogonal)):
        assert type(I.get(name)) is cls
    np.testing.assert_array_equal(I.IdentityInitializer(gain=2.0)((2, 3)).numpy(),
                                  [[2, 0, 0], [0, 2, 0]])
    np.testing.assert_array_equal(I.identity()((3, 2)).numpy(), [[1, 0], [0, 1], [0, 0]])
    w = I.OrthogonalInitializer(gain=1.5, seed=3)((5, 3)).numpy()
    assert w.shape == (5, 3)
    np.testing.assert_allclose(w.T @ w, 2.25 * np.eye(3), atol=1e-5)
    w = I.orthogonal(seed=3)((2, 3, 4)).numpy().reshape(6, 4)
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-5)
    w = I.orthogonal(seed=3)((2, 6)).numpy()
    np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-5)


def test_keras_random_seeds_and_distributions(device):
    """Keras 3: an int seed repeats its draws; a SeedGenerator advances ([42, 2] after two
    draws) and another of the same seed repeats the sequence; dtypes are checked."""
    R = keras.random
    a = R.normal((4,), seed=7)
    assert a.device is device and a.dtype == gt.float32
    np.testing.assert_array_equal(a.numpy(), R.normal((4,), seed=7).numpy())
    np.testing.assert_array_equal(R.uniform((4,), seed=7).numpy(),
                                  R.uniform((4,), seed=7).numpy())
    sg = R.SeedGenerator(42)
    x1, x2 = R.normal((4,), seed=sg), R.normal((4,), seed=sg)
    assert not np.allclose(x1.numpy(), x2.numpy())
    np.testing.assert_array_equal(x1.numpy(), R.normal((4,), seed=R.SeedGenerator(42)).numpy())
    assert sg.state.dtype == gt.int64 and sg.state.numpy().tolist() == [42, 2]
    assert sg.get_config() == {"seed": 42, "name": sg.name}
    with pytest.raises(ValueError, match="requires a floating point `dtype`"):
        R.uniform((2,), dtype="int32")
    with pytest.raises(ValueError, match="requires an integer `dtype`"):
        R.randint((2,), 0, 5, dtype="float32")
    with pytest.raises(ValueError, match="Argument `seed` must be either an integer"):
        R.normal((2,), seed="a")
    r = R.randint((1000,), 2, 5, seed=3).numpy()
    assert r.dtype == np.int32 and r.min() == 2 and r.max() == 4
    assert R.randint((3,), 0, 5, dtype="uint8", seed=3).dtype == gt.uint8
    u = R.uniform((1000,), 2.0, 5.0, seed=3).numpy()
    assert u.min() >= 2 and u.max() < 5
    assert np.abs(R.truncated_normal((1000,), seed=3).numpy()).max() <= 2
    ones = np.ones((100, 10), np.float32)
    d = R.dropout(ones, 0.5, seed=1).numpy()
    assert set(d.ravel().tolist()) == {0.0, 2.0}
    d = R.dropout(ones, 0.5, noise_shape=(None, 1), seed=1).numpy()
    assert all(len(set(row)) == 1 for row in d.tolist())
    assert R.dropout(ones, 0.0).numpy().sum() == 1000 and R.dropout(ones, 1.0).numpy().sum() == 0
    s = R.shuffle(np.arange(12).reshape(3, 4), axis=1, seed=4).numpy()
    assert s.shape == (3, 4) and sorted(s[0].tolist()) == [0, 1, 2, 3]
    np.testing.assert_array_equal(s, R.shuffle(np.arange(12).reshape(3, 4), axis=1,
                                               seed=4).numpy())
    c = R.categorical(np.log(np.array([[1e-4, 1.0, 1e-4]], np.float32)), 5, seed=1)
    assert c.dtype == gt.int32 and c.numpy().tolist() == [[1, 1, 1, 1, 1]]
    with pytest.raises(ValueError, match="`logits` should be a 2-D tensor"):
        R.categorical(np.zeros(3), 2)
    assert abs(float(gt.reduce_mean(R.gamma((2000,), 2.0, seed=1))) - 2.0) < 0.15
    assert abs(float(gt.reduce_mean(R.beta((2000,), 2.0, 2.0, seed=1))) - 0.5) < 0.05
    assert abs(float(gt.reduce_mean(R.binomial((2000,), 10.0, 0.3, seed=1))) - 3.0) < 0.2


def test_keras_global_seed_follows_set_random_seed():
    keras.utils.set_random_seed(5)
    a = keras.random.normal((3,)).numpy()
    keras.utils.set_random_seed(5)
    np.testing.assert_array_equal(a, keras.random.normal((3,)).numpy())


def test_keras_variable_and_name_scope():
    """Keras 3: paths under name scopes; a value keeps its dtype (a Python float floatx, an
    int int32); an initializer needs a shape; names cannot hold '/'."""
    with keras.name_scope("outer"):
        with keras.name_scope("inner", caller=None):
            v = keras.Variable(1.0, name="w")
    assert v.path == "outer/inner/w" and isinstance(v, gt.Variable)
    cases = [(("ones",), (2,), "float32", (2,)), ((keras.initializers.Ones(),), (2,), "float32",
                                                (2,)),
             ((np.ones((2,)),), None, "float64", (2,)), ((1,), None, "int32", ()),
             (([1, 2],), None, "int32", (2,)), ((np.int32(3),), None, "int32", ()),
             ((1.0,), None, "float32", ())]
    for args, shape, dtype, want_shape in cases:
        v = keras.Variable(*args, shape=shape)
        assert v.dtype.name == dtype and tuple(v.shape) == want_shape and v.trainable
    assert keras.Variable(1.0, dtype="float16").dtype == gt.float16
    assert keras.Variable(1.0, trainable=False).trainable is False
    assert isinstance(keras.Variable(np.ones(2)), keras.Variable)
    assert not isinstance(gt.constant(1.0), keras.Variable)
    with pytest.raises(ValueError, match="the `shape` argument should be specified"):
        keras.Variable(keras.initializers.Ones())
    with pytest.raises(ValueError, match="cannot contain character `/`"):
        keras.Variable(1.0, name="a/b")
    with pytest.raises(ValueError, match="Invalid value for argument `aggregation`"):
        keras.Variable(1.0, aggregation="bogus")
    assert float(keras.Variable(1.0, aggregation=None, synchronization="on_read")) == 1.0


def test_keras_config(monkeypatch):
    from gradtape import mixed_precision
    monkeypatch.setattr(mixed_precision, "_GLOBAL", [None])     # (no global policy set)
    c = keras.config
    assert (c.floatx(), c.epsilon(), c.image_data_format(), c.backend()) == \
        ("float32", 1e-7, "channels_last", "tensorflow")
    assert c.dtype_policy().name == "float32"
    c.set_epsilon(1e-5)
    try:
        assert c.epsilon() == 1e-5 and keras.backend.epsilon() == 1e-5
    finally:
        c.set_epsilon(1e-7)
    c.set_dtype_policy("mixed_float16")
    assert c.dtype_policy().name == "mixed_float16"
    assert keras.layers.Dense(2).dtype_policy.name == "mixed_float16"
    with pytest.raises(ValueError, match="The `data_format` argument must be one of"):
        c.set_image_data_format("foo")
    c.set_image_data_format("channels_last")
    with pytest.raises(ValueError, match="pass data_format='channels_first' to each layer"):
        keras.backend.set_image_data_format("channels_first")
    assert c.image_data_format() == "channels_last"
    assert c.enable_unsafe_deserialization() is None


def test_keras_utils_additions():
    u = keras.utils

    @u.register_keras_serializable(package="SurfaceTest", name="SurfaceFoo")
    class Foo(keras.layers.Layer):
        pass

    def myfn(x):
        return x
    assert u.get_registered_name(Foo) == "SurfaceTest>SurfaceFoo"
    assert u.get_registered_name(myfn) == "myfn"
    assert u.get_registered_name(keras.layers.Dense) == "Dense"
    assert u.get_registered_object("SurfaceTest>SurfaceFoo") is Foo
    assert u.get_registered_object("zzz") is None
    assert u.get_registered_object("myfn", custom_objects={"myfn": myfn}) is myfn
    assert u.get_registered_object("abs", module_objects={"abs": abs}) is abs
    with u.custom_object_scope({"bar": myfn}):
        assert u.get_registered_object("bar") is myfn
    want = {"float32": "float32", np.float64: "float64", gt.float16: "float16", "int": "int64",
            "bool": "bool", int: "int64", float: "float32", bool: "bool", "uint8": "uint8",
            np.dtype("int64"): "int64", None: "float32", "string": "string",
            "bfloat16": "bfloat16"}
    for given, name in want.items():
        assert u.standardize_dtype(given) == name
    for bad in ("float", "double", "str", "foo"):
        with pytest.raises(ValueError, match=f"Invalid dtype: {bad}"):
            u.standardize_dtype(bad)
    assert keras.backend.standardize_dtype("float32") == "float32"
    inp = keras.Input((3,))
    x = keras.layers.Dense(2)(inp)
    y = keras.layers.Dense(1)(x)
    assert u.get_source_inputs(y) == [inp] and u.get_source_inputs(inp) == [inp]
    inp2 = keras.Input((3,))
    z = keras.layers.Add()([x, keras.layers.Dense(2)(inp2)])
    src = u.get_source_inputs(z)
    assert len(src) == 2 and src[0] is inp and src[1] is inp2
    t = gt.constant(1.0)
    assert u.get_source_inputs(t) is t
    assert u.is_keras_tensor(y) and not u.is_keras_tensor(t) and keras.backend.is_keras_tensor(y)
    u.clear_session()
    assert keras.layers.Dense(1).name == "dense"


def test_img_to_array_and_array_to_img():
    u = keras.utils
    a = u.img_to_array(np.ones((2, 2, 3)))
    assert a.dtype == np.float32 and a.shape == (2, 2, 3)
    assert u.img_to_array(np.ones((2, 2, 3)), data_format="channels_first").shape == (3, 2, 2)
    assert u.img_to_array(np.ones((2, 4))).shape == (2, 4, 1)
    assert u.img_to_array(np.ones((2, 4)), data_format="channels_first").shape == (1, 2, 4)
    assert u.img_to_array(np.ones((2, 4)), dtype="uint8").dtype == np.uint8
    with pytest.raises(ValueError, match=r"Unsupported image shape: \(2,\)"):
        u.img_to_array(np.ones((2,)))
    pytest.importorskip("PIL")
    arr = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    img = u.array_to_img(arr)
    assert img.mode == "RGB" and img.size == (4, 2)
    back = u.img_to_array(img)
    assert back.shape == (2, 4, 3)
    np.testing.assert_array_equal(back[0, 0], [0.0, 11.0, 22.0])      # scaled to 0..255
    assert u.array_to_img(arr, scale=False).getpixel((1, 0)) == (3, 4, 5)
    gray = u.array_to_img(np.arange(8, dtype=np.float32).reshape(2, 4, 1))
    assert gray.mode == "L" and u.img_to_array(gray).shape == (2, 4, 1)
    assert u.array_to_img(np.arange(32, dtype=np.float32).reshape(2, 4, 4)).mode == "RGBA"
    assert u.array_to_img(np.ones((3, 2, 4)), data_format="channels_first").size == (4, 2)
    with pytest.raises(ValueError, match="Expected image array to have rank 3"):
        u.array_to_img(np.ones((2, 2)))
    with pytest.raises(ValueError, match="Unsupported channel number: 2"):
        u.array_to_img(np.ones((2, 2, 2)))
