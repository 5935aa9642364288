/* gradtape._speedups: the per-op hot paths in C.
 *
 * Optional: gradtape runs the same logic in Python when this module is missing (no C
 * compiler at install time) or when GRADTAPE_PURE_PYTHON=1. Nothing here changes what an op
 * computes; it only removes the interpreter from three places that run once per op:
 *
 *   - elementwise op dispatch (Unary / Binary callables): a plain Tensor (or a Python number
 *     beside one) on a device that needs no switching goes straight to the array namespace's
 *     function or the Python operator, and the result is wrapped without __init__. Anything
 *     else (Variables, other dtypes, keyword arguments, errors) calls the Python function,
 *     which does the full checks and raises the named errors.
 *   - recording such an op on the one active tape (the tape module's record_unary /
 *     record_binary, same entry layout); other cases go to the registry's _slow_path.
 *   - the backward sweep's common case on raw arrays (one output, at most two inputs), the
 *     loop of tape._backward; every other entry goes back to Python.
 *
 * Tensor stays a Python class with __slots__: its slots are read and written through the
 * member descriptors' offsets, looked up once in setup().
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static PyTypeObject *Tensor_T = NULL;
static PyTypeObject *Variable_T = NULL;   /* read like a Tensor; recorded by the Python path */
static PyTypeObject *Op_T = NULL, *TState_T = NULL;   /* registry.Op, registry._ThreadState */

static int
ready(void)
{
    if (Tensor_T == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.setup() has not been called");
        return 0;
    }
    return 1;
}

static Py_ssize_t OFF_VALUE = -1, OFF_DEVICE = -1, OFF_ID = -1;
static PyObject *STATE = NULL;
static Py_ssize_t OFF_ACTIVE = -1, OFF_CHECKNUM = -1;
static PyObject *TLS = NULL;
static Py_ssize_t OFF_TAPES = -1, OFF_ACCS = -1;
static Py_ssize_t OFF_OP_VJP = -1, OFF_OP_MULTI = -1, OFF_OP_BROADCASTS = -1;
static Py_ssize_t OFF_OP_NONDIFF = -1, OFF_OP_SAVE_IN = -1, OFF_OP_SAVE_OUT = -1;
static PyObject *SLOW_PATH = NULL; /* registry._slow_path(op, args, result, attrs, vals) */
static long long ID_COUNTER = 0;

/* 1 for a plain Tensor, 2 for a Variable (exact types), 0 otherwise */
static inline int
tensor_kind(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    int k = t == Tensor_T ? 1 : (t == Variable_T && t != NULL) ? 2 : 0;
    /* a tensor made without __init__ and never completed goes to the Python code, which
     * raises AttributeError for the missing slot */
    if (k && (SLOT(o, OFF_ID) == NULL || SLOT(o, OFF_VALUE) == NULL ||
              SLOT(o, OFF_DEVICE) == NULL))
        return 0;
    return k;
}

static PyObject *S_complex_view;
static PyObject *S_dtype, *S_kind, *S_xp, *S_needs_switch, *S_state, *S_tracked, *S_entries,
    *S_shape;

/* --- helpers ------------------------------------------------------------------------ */

static Py_ssize_t
slot_offset(PyObject *type, const char *name)
{
    PyObject *d = PyObject_GetAttrString(type, name);
    if (d == NULL)
        return -1;
    if (!PyObject_TypeCheck(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "_speedups: %R.%s is not a slot", type, name);
        Py_DECREF(d);
        return -1;
    }
    Py_ssize_t off = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    return off;
}

static PyObject *
new_id(void)
{
    return PyLong_FromLongLong(++ID_COUNTER);
}

/* --- Tensor allocation -------------------------------------------------------------------
 *
 * A Tensor is a small heap-type object made and dropped once per op, and CPython's generic
 * path for that (PyType_GenericAlloc, then subtype_dealloc, which walks the class for
 * finalizers, slots and dicts) costs more than the rest of an op on a small array. setup()
 * therefore installs tensor_dealloc as Tensor's tp_dealloc, when the class has the layout it
 * expects (only object slots and __weakref__, no finalizer, no dict, object as its base):
 * it clears exactly Tensor's slots and keeps up to FREE_MAX freed plain Tensors for
 * wrap_value to reuse. Subclasses (Variable, users' classes) keep CPython's subtype_dealloc,
 * which clears their own slots and then calls this as the base class's deallocator, as it
 * would call object's. */
#if defined(__GNUC__)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define UNLIKELY(x) (x)
#endif
#define MAX_TENSOR_SLOTS 8
#define FREE_MAX 64
static Py_ssize_t TENSOR_SLOT_OFFS[MAX_TENSOR_SLOTS];
static int N_TENSOR_SLOTS = 0;
static PyTypeObject *INSTALLED_T = NULL;   /* the class tensor_dealloc is installed on */
static PyObject *FREE_TENSORS[FREE_MAX];
static int N_FREE = 0;

static void
tensor_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (UNLIKELY(tp->tp_finalize != NULL) && tp == INSTALLED_T) {
        /* a __del__ given to the class after the install: run it as subtype_dealloc would
         * (subclasses' own subtype_dealloc has run theirs before calling this) */
        PyObject_GC_Track(self);
        if (PyObject_CallFinalizerFromDealloc(self) < 0)
            return;   /* resurrected */
        PyObject_GC_UnTrack(self);
    }
    Py_TRASHCAN_BEGIN(self, tensor_dealloc)
    PyObject **weaklist = (PyObject **)((char *)self + INSTALLED_T->tp_weaklistoffset);
    if (*weaklist != NULL)
        PyObject_ClearWeakRefs(self);
    for (int i = 0; i < N_TENSOR_SLOTS; i++)
        Py_CLEAR(SLOT(self, TENSOR_SLOT_OFFS[i]));
    if (tp == INSTALLED_T && tp->tp_finalize == NULL && N_FREE < FREE_MAX) {
        /* kept whole, with its reference to the class, for wrap_value (never one that was
         * finalized: its GC header remembers that, and a reused object must not) */
        FREE_TENSORS[N_FREE++] = self;
    }
    else {
        tp->tp_free(self);
        Py_DECREF(tp);
    }
    Py_TRASHCAN_END
}

static int
getenv_flag(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* Whether Tensor's layout is the one tensor_dealloc knows; fills TENSOR_SLOT_OFFS. */
static int
tensor_layout_ok(PyTypeObject *tp, PyTypeObject *sub)
{
#if PY_VERSION_HEX >= 0x030C0000
    /* 3.12 on: __slots__ classes keep their weak references before the object (managed)
     * and reference counting has more to it (immortal objects, tracers): CPython's own
     * deallocator stays */
    (void)tp;
    (void)sub;
    return 0;
#else
    unsigned long need = Py_TPFLAGS_HEAPTYPE | Py_TPFLAGS_HAVE_GC;
    if ((tp->tp_flags & need) != need || tp->tp_base != &PyBaseObject_Type ||
            tp->tp_dealloc != sub->tp_dealloc ||   /* both CPython's subtype_dealloc */
            tp->tp_finalize != NULL || tp->tp_del != NULL || tp->tp_dictoffset != 0 ||
            tp->tp_weaklistoffset <= 0 || tp->tp_itemsize != 0 ||
            tp->tp_free != PyObject_GC_Del)
        return 0;
#ifdef Py_TPFLAGS_MANAGED_DICT
    if (tp->tp_flags & Py_TPFLAGS_MANAGED_DICT)
        return 0;
#endif
#ifdef Py_TPFLAGS_MANAGED_WEAKREF
    if (tp->tp_flags & Py_TPFLAGS_MANAGED_WEAKREF)
        return 0;
#endif
    /* the class's own member descriptors: every slot must be an object slot */
    PyObject *dict = tp->tp_dict, *key, *value;
    Py_ssize_t pos = 0;
    int n = 0;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (Py_TYPE(value) != &PyMemberDescr_Type ||
                ((PyDescrObject *)value)->d_type != tp)
            continue;
        PyMemberDef *def = ((PyMemberDescrObject *)value)->d_member;
        if (def->type != T_OBJECT_EX || (def->flags & READONLY) || n == MAX_TENSOR_SLOTS)
            return 0;
        TENSOR_SLOT_OFFS[n++] = def->offset;
    }
    /* the object header, the slots and the weak reference list, nothing else */
    if (tp->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + (n + 1) * sizeof(PyObject *)))
        return 0;
    N_TENSOR_SLOTS = n;
    return 1;
#endif
}

/* A Tensor holding ``value`` (stolen) on ``dev`` (borrowed); NULL on error. */
static PyObject *
wrap_value(PyObject *value, PyObject *dev)
{
    PyObject *t;
#if PY_VERSION_HEX < 0x030C0000   /* (the free list is used up to 3.11, see above) */
    if (N_FREE > 0 && Tensor_T == INSTALLED_T) {
        t = FREE_TENSORS[--N_FREE];
        _Py_NewReference(t);
        PyObject *id = new_id();
        if (id == NULL) {
            Py_DECREF(value);
            Py_DECREF(t);   /* back to the free list, slots empty */
            return NULL;
        }
        SLOT(t, OFF_VALUE) = value;
        Py_INCREF(dev);
        SLOT(t, OFF_DEVICE) = dev;
        SLOT(t, OFF_ID) = id;
        PyObject_GC_Track(t);
        return t;
    }
#endif
    t = Tensor_T->tp_alloc(Tensor_T, 0);
    if (t == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    PyObject *id = new_id();
    if (id == NULL) {
        Py_DECREF(value);
        Py_DECREF(t);
        return NULL;
    }
    SLOT(t, OFF_VALUE) = value;
    Py_INCREF(dev);
    SLOT(t, OFF_DEVICE) = dev;
    SLOT(t, OFF_ID) = id;
    return t;
}

/* dtype kinds by dtype object (dtypes of built-in types are singletons) */
#define KIND_CACHE 32
static PyObject *KIND_DT[KIND_CACHE];
static char KIND_CH[KIND_CACHE];
static int N_KIND = 0;

static int
dtype_kind(PyObject *dt)
{
    for (int i = 0; i < N_KIND; i++)
        if (KIND_DT[i] == dt)
            return KIND_CH[i];
    PyObject *k = PyObject_GetAttr(dt, S_kind);
    if (k == NULL)
        return -1;
    int ch = -1;
    if (PyUnicode_Check(k) && PyUnicode_GET_LENGTH(k) == 1)
        ch = (int)PyUnicode_READ_CHAR(k, 0);
    else if (PyBytes_Check(k) && PyBytes_GET_SIZE(k) == 1)
        ch = (unsigned char)PyBytes_AS_STRING(k)[0];
    Py_DECREF(k);
    if (ch < 0) {
        PyErr_SetString(PyExc_TypeError, "_speedups: unexpected dtype.kind");
        return -1;
    }
    if (N_KIND < KIND_CACHE) {
        Py_INCREF(dt);
        KIND_DT[N_KIND] = dt;
        KIND_CH[N_KIND] = (char)ch;
        N_KIND++;
    }
    return ch;
}

/* NumPy arrays: the dtype is read from the array struct, the way NumPy's own C API macro
 * PyArray_DESCR does (its layout is part of NumPy's ABI, the same in 1.x and 2.x); setup()
 * checks the offset on sample arrays and leaves it off (-1) if they disagree. Other arrays
 * (CuPy, the strict device's) go through the ``dtype`` attribute. */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
    PyObject *weakreflist;
} ArrayHead;

#define ARRAY_OWNDATA 0x0004     /* NPY_ARRAY_OWNDATA */
#define ARRAY_WRITEABLE 0x0400   /* NPY_ARRAY_WRITEABLE */

static PyTypeObject *NDARRAY_T = NULL;
static Py_ssize_t OFF_DESCR = -1;

/* the kind of an array's dtype, and the dtype itself (new reference) in *dt when dt != NULL */
static int
array_kind(PyObject *v, PyObject **dt)
{
    PyObject *d;
    if (Py_TYPE(v) == NDARRAY_T && OFF_DESCR >= 0) {
        d = SLOT(v, OFF_DESCR);
        Py_INCREF(d);
    }
    else
        d = PyObject_GetAttr(v, S_dtype);
    if (d == NULL)
        return -1;
    int k = dtype_kind(d);
    if (dt != NULL && k >= 0)
        *dt = d;
    else
        Py_DECREF(d);
    return k;
}

static PyObject *INT_ZERO, *INT_ONE;   /* (set at import: CPython's cached 0 and 1) */

static int
state_active(void)
{
    PyObject *a = SLOT(STATE, OFF_ACTIVE);
    /* (the count is a Python int: 0 is CPython's cached small int, compared by identity) */
    if (a == NULL || a == INT_ZERO || a == Py_False)
        return 0;
    if (a == Py_True)
        return 1;
    return PyObject_IsTrue(a);
}

/* Only ordinary errors fall back to the Python path (which raises the named error);
 * KeyboardInterrupt, SystemExit and the like propagate. */
static int
recoverable(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

/* A device's namespace function ``name`` when the device needs no switching, else NULL with
 * no error set. Cached per callable for the last device seen. */
typedef struct {
    PyObject *dev;
    PyObject *func;
    int ok;
} DevCache;

static int
devcache_refresh(DevCache *c, PyObject *dev, PyObject *name)
{
    PyObject *sw = PyObject_GetAttr(dev, S_needs_switch);
    if (sw == NULL)
        return -1;
    int needs = PyObject_IsTrue(sw);
    Py_DECREF(sw);
    if (needs < 0)
        return -1;
    PyObject *func = NULL;
    if (!needs && name != NULL) {
        PyObject *xp = PyObject_GetAttr(dev, S_xp);
        if (xp == NULL)
            return -1;
        func = PyObject_GetAttr(xp, name);
        Py_DECREF(xp);
        if (func == NULL) {
            if (!recoverable())
                return -1;
            needs = 1;
        }
    }
    Py_INCREF(dev);
    Py_XSETREF(c->dev, dev);
    Py_XSETREF(c->func, func);
    c->ok = !needs;
    return 0;
}

/* --- recording -------------------------------------------------------------------- */

/* A tape's attribute (new reference): read from its slot when the tape is a GradientTape
 * (bind_tape gave the offsets), else by name. */
static PyTypeObject *TAPE_T = NULL;
static Py_ssize_t OFF_T_ENTRIES = -1, OFF_T_TRACKED = -1, OFF_T_WATCH = -1;

static PyObject *
tape_attr(PyObject *tape, Py_ssize_t off, PyObject *name)
{
    if (off >= 0 && TAPE_T != NULL && PyObject_TypeCheck(tape, TAPE_T)) {
        PyObject *v = SLOT(tape, off);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(tape, name);
}

typedef struct {
    PyObject *op;
    int nondiff, multi, save_in, save_out, broadcasts;
} OpFlags;

static int
read_op_flags(PyObject *op, OpFlags *f)
{
    if (!PyObject_TypeCheck(op, Op_T)) {
        PyErr_Format(PyExc_TypeError, "_speedups: expected a registry.Op, got %R", op);
        return -1;
    }
    PyObject *vals[5];
    Py_ssize_t offs[5] = {OFF_OP_NONDIFF, OFF_OP_MULTI, OFF_OP_SAVE_IN, OFF_OP_SAVE_OUT,
                          OFF_OP_BROADCASTS};
    int *dst[5] = {&f->nondiff, &f->multi, &f->save_in, &f->save_out, &f->broadcasts};
    for (int i = 0; i < 5; i++) {
        vals[i] = SLOT(op, offs[i]);
        int b = vals[i] == NULL ? 0 : PyObject_IsTrue(vals[i]);
        if (b < 0)
            return -1;
        *dst[i] = b;
    }
    f->op = op;   /* borrowed: an OpFunction takes its own reference */
    return 0;
}

/* The thread's state object (new reference) or NULL with no error when it has none. */
static uint64_t CACHED_THREAD = 0;   /* PyThreadState_GetID of the thread cached below */
static PyObject *CACHED_STATE = NULL; /* that thread's state (set once per thread) */

static int CACHE_STATE = 0;   /* TLS is _thread._local (per OS thread): the cache holds */

static PyObject *
thread_state(void)
{
    uint64_t tid = PyThreadState_GetID(PyThreadState_Get());
    if (CACHED_STATE != NULL && tid == CACHED_THREAD)
        return Py_NewRef(CACHED_STATE);
    PyObject *st = PyObject_GetAttr(TLS, S_state);
    if (st == NULL && PyErr_ExceptionMatches(PyExc_AttributeError))
        PyErr_Clear();
    else if (st != NULL && !PyObject_TypeCheck(st, TState_T)) {
        PyErr_Format(PyExc_TypeError, "_speedups: the thread state is %R", st);
        Py_CLEAR(st);
    }
    if (st != NULL && CACHE_STATE) {
        Py_XSETREF(CACHED_STATE, Py_NewRef(st));
        CACHED_THREAD = tid;
    }
    return st;
}

static int
call_slow_path(PyObject *op, PyObject *args, PyObject *out, PyObject *vals)
{
    PyObject *stack[5] = {op, args, out, Py_None, vals};
    PyObject *r = PyObject_Vectorcall(SLOW_PATH, stack, 5, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Does the single tape (borrowed in *tape) take the fast recording? 1 yes, 0 slow, -1 err */
static int
one_plain_tape(PyObject *st, OpFlags *f, PyObject **tape)
{
    PyObject *tapes = SLOT(st, OFF_TAPES), *accs = SLOT(st, OFF_ACCS);
    if (tapes == NULL || accs == NULL || !PyList_Check(tapes) || !PyList_Check(accs))
        return 0;
    if (PyList_GET_SIZE(accs) || PyList_GET_SIZE(tapes) != 1 || f->nondiff || f->multi)
        return 0;
    PyObject *cn = SLOT(STATE, OFF_CHECKNUM);
    if (cn != NULL && cn != Py_False) {
        int b = PyObject_IsTrue(cn);
        if (b != 0)
            return b < 0 ? -1 : 0;
    }
    *tape = PyList_GET_ITEM(tapes, 0);
    return 1;
}

static PyObject *
tuple1(PyObject *a)
{
    return PyTuple_Pack(1, a);
}

/* The tape that takes the fast recording (new reference in *tape): 1; 3 when the one tape
 * takes the general C recorder (an operand is a Variable); 0 when the op must go to the
 * Python recorder (_slow_path); 2 when this thread has no tapes; -1 on error. */
static int
fast_tape(OpFlags *f, int plain, PyObject **tape)
{
    PyObject *st = thread_state();
    if (st == NULL)
        return PyErr_Occurred() ? -1 : 2;
    int rc = one_plain_tape(st, f, tape);
    if (rc == 1) {
        Py_INCREF(*tape);
        if (!plain)
            rc = 3;
    }
    Py_DECREF(st);
    return rc;
}

static PyObject *record_impl(PyObject *tape, PyObject *op, PyObject *targs, PyObject *result,
                             PyObject *attrs, PyObject *vals);

/* An op with a Variable operand on the one tape: the general C recorder, else (it declines)
 * the Python recorder. Steals the tape reference. */
static int
record_general(OpFlags *f, PyObject *tape, PyObject *args, PyObject *out, PyObject *vals)
{
    int r = -1;
    if (args != NULL && vals != NULL) {
        PyObject *done = record_impl(tape, f->op, args, out, Py_None, vals);
        if (done != NULL) {
            r = done == Py_True ? 0 : call_slow_path(f->op, args, out, vals);
            Py_DECREF(done);
        }
    }
    Py_DECREF(tape);
    return r;
}

/* Record a float or complex output: track its id and append the entry (op, attrs, in_ids,
 * saved, shapes, (out_id,), outs, device, vals) to the tape; a complex output records the
 * op's complex_view (its rule conjugated). The parts are borrowed; NULL parts (a failed
 * build) give -1. Any other output is not recorded: 0. */
static int
append_entry(PyObject *tape, PyObject *tracked, OpFlags *f, PyObject *attrs, PyObject *in_ids,
             PyObject *saved, PyObject *shapes, PyObject *out, PyObject *vals)
{
    if (in_ids == NULL || saved == NULL || shapes == NULL || vals == NULL)
        return -1;   /* (the failed build set the error) */
    int k = array_kind(SLOT(out, OFF_VALUE), NULL);
    if (k != 'f' && k != 'c')
        return k < 0 ? -1 : 0;
    PyObject *op = k == 'c' ? PyObject_GetAttr(f->op, S_complex_view) : Py_NewRef(f->op);
    if (op == NULL)
        return -1;
    PyObject *oid = SLOT(out, OFF_ID);
    PyObject *out_ids = PyTuple_Pack(1, oid);
    PyObject *outs = f->save_out ? PyTuple_Pack(1, out) : Py_NewRef(Py_None);
    PyObject *entries = tape_attr(tape, OFF_T_ENTRIES, S_entries);
    PyObject *entry = NULL;
    int rc = -1;
    if (entries != NULL && !PyList_Check(entries))
        PyErr_SetString(PyExc_TypeError, "_speedups: tape._entries is not a list");
    else if (out_ids != NULL && outs != NULL && entries != NULL) {
        entry = PyTuple_Pack(9, op, attrs, in_ids, saved, shapes, out_ids, outs,
                             SLOT(out, OFF_DEVICE), vals);
        if (entry != NULL && PySet_Add(tracked, oid) == 0 && PyList_Append(entries, entry) == 0)
            rc = 0;
    }
    Py_XDECREF(entry);
    Py_XDECREF(entries);
    Py_XDECREF(outs);
    Py_XDECREF(out_ids);
    Py_DECREF(op);
    return rc;
}

/* The tape's tracked set (new reference) or NULL with an error */
static PyObject *
tracked_set(PyObject *tape)
{
    PyObject *tracked = tape_attr(tape, OFF_T_TRACKED, S_tracked);
    if (tracked != NULL && !PySet_Check(tracked)) {
        PyErr_SetString(PyExc_TypeError, "_speedups: tape._tracked is not a set");
        Py_CLEAR(tracked);
    }
    return tracked;
}

/* record_unary: x a Tensor or Variable with value v, out the result; only a plain Tensor
 * (plain != 0) takes the fast recording, a Variable goes to the general Python recorder */
static int
record_unary(OpFlags *f, PyObject *x, PyObject *out, PyObject *v, int plain)
{
    PyObject *tape = NULL;
    int rc = fast_tape(f, plain, &tape);
    if (rc != 1) {
        if (rc != 0 && rc != 3)
            return rc < 0 ? -1 : 0;
        PyObject *args = tuple1(x), *vals = tuple1(v);
        int r = rc == 3 ? record_general(f, tape, args, out, vals) :
                (args && vals) ? call_slow_path(f->op, args, out, vals) : -1;
        Py_XDECREF(args);
        Py_XDECREF(vals);
        return r;
    }
    int result = -1;
    PyObject *tracked = tracked_set(tape);
    if (tracked != NULL) {
        result = PySet_Contains(tracked, SLOT(x, OFF_ID));
        if (result > 0) {
            PyObject *in_ids = tuple1(SLOT(x, OFF_ID));
            PyObject *saved = f->save_in ? tuple1(x) : Py_NewRef(Py_None);
            PyObject *vals = f->save_in ? tuple1(v) : Py_NewRef(Py_None);
            result = append_entry(tape, tracked, f, Py_None, in_ids, saved, Py_None, out, vals);
            Py_XDECREF(in_ids);
            Py_XDECREF(saved);
            Py_XDECREF(vals);
        }
        Py_DECREF(tracked);
    }
    Py_DECREF(tape);
    return result;
}

/* record_binary: operands a, b (each a Tensor, a Variable or a Python number, at least one a
 * tensor), their values av, bv, out the result; plain: no Variable among them */
static int
record_binary(OpFlags *f, PyObject *a, PyObject *b, PyObject *out, PyObject *av,
              PyObject *bv, int plain)
{
    PyObject *tape = NULL;
    int rc = fast_tape(f, plain, &tape);
    if (rc != 1) {
        if (rc != 0 && rc != 3)
            return rc < 0 ? -1 : 0;
        PyObject *args = PyTuple_Pack(2, a, b), *vals = PyTuple_Pack(2, av, bv);
        int r = rc == 3 ? record_general(f, tape, args, out, vals) :
                (args && vals) ? call_slow_path(f->op, args, out, vals) : -1;
        Py_XDECREF(args);
        Py_XDECREF(vals);
        return r;
    }
    int result = -1;
    int ta = Py_TYPE(a) == Tensor_T, tb = Py_TYPE(b) == Tensor_T;
    PyObject *tracked = tracked_set(tape);
    if (tracked == NULL)
        goto done;
    int hit = ta ? PySet_Contains(tracked, SLOT(a, OFF_ID)) : 0;
    if (hit == 0 && tb)
        hit = PySet_Contains(tracked, SLOT(b, OFF_ID));
    if (hit <= 0) {
        result = hit;
        goto done;
    }
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL)
        goto done;
    PyObject *in_ids = PyTuple_Pack(2, ta ? SLOT(a, OFF_ID) : zero, tb ? SLOT(b, OFF_ID) : zero);
    Py_DECREF(zero);
    PyObject *saved, *vals, *shapes;
    if (f->save_in) {
        saved = PyTuple_Pack(2, a, b);
        vals = PyTuple_Pack(2, av, bv);
        shapes = Py_NewRef(Py_None);
    }
    else {
        saved = Py_NewRef(Py_None);
        vals = Py_NewRef(Py_None);
        shapes = Py_NewRef(Py_None);
        if (f->broadcasts) {
            PyObject *sa = ta ? PyObject_GetAttr(av, S_shape) : Py_NewRef(Py_None);
            PyObject *sb = tb ? PyObject_GetAttr(bv, S_shape) : Py_NewRef(Py_None);
            Py_SETREF(shapes, (sa && sb) ? PyTuple_Pack(2, sa, sb) : NULL);
            Py_XDECREF(sa);
            Py_XDECREF(sb);
        }
    }
    result = append_entry(tape, tracked, f, Py_None, in_ids, saved, shapes, out, vals);
    Py_XDECREF(in_ids);
    Py_XDECREF(saved);
    Py_XDECREF(vals);
    Py_XDECREF(shapes);
done:
    Py_XDECREF(tracked);
    Py_DECREF(tape);
    return result;
}

/* record(tape, op, args, result, attrs, vals) -> bool
 *
 * tape.record for one tape and a one-output op whose tensor arguments are plain Tensors or
 * Variables (watched on access as the Python recorder does, saved as snapshots). False
 * means "not handled here" (multi-output ops, Tensor subclasses ...): the caller records
 * with the Python code. */
static PyObject *S_watch_accessed, *S_trainable, *S_watch_variable;

static PyObject *
snapshot(PyObject *var)
{
    PyObject *t = Tensor_T->tp_alloc(Tensor_T, 0);
    if (t == NULL)
        return NULL;
    SLOT(t, OFF_VALUE) = Py_NewRef(SLOT(var, OFF_VALUE));
    SLOT(t, OFF_DEVICE) = Py_NewRef(SLOT(var, OFF_DEVICE));
    SLOT(t, OFF_ID) = Py_NewRef(SLOT(var, OFF_ID));
    return t;
}

static PyObject *
mod_record(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "record(tape, op, args, result, attrs, vals)");
        return NULL;
    }
    if (!ready())
        return NULL;
    return record_impl(args[0], args[1], args[2], args[3], args[4], args[5]);
}

static PyObject *
record_impl(PyObject *tape, PyObject *op, PyObject *targs, PyObject *result, PyObject *attrs,
            PyObject *vals)
{
    if (!PyTuple_Check(targs) || Py_TYPE(result) != Tensor_T)
        Py_RETURN_FALSE;
    if (vals != Py_None && !PyTuple_Check(vals) && !PyList_Check(vals))
        Py_RETURN_FALSE;
    OpFlags f;
    if (read_op_flags(op, &f) < 0)   /* (f.op borrowed from the caller) */
        return NULL;
    if (f.multi)
        Py_RETURN_FALSE;
    Py_ssize_t n = PyTuple_GET_SIZE(targs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(targs, i);
        if (!tensor_kind(a) && PyObject_TypeCheck(a, Tensor_T))
            Py_RETURN_FALSE;   /* a Tensor subclass: the Python recorder */
    }
    PyObject *tracked = tape_attr(tape, OFF_T_TRACKED, S_tracked);
    if (tracked == NULL)
        return NULL;
    if (!PySet_Check(tracked)) {
        Py_DECREF(tracked);
        Py_RETURN_FALSE;
    }
    PyObject *ret = NULL;
    PyObject *in_ids = NULL, *saved = NULL, *shapes = NULL, *vtuple = NULL, *zero = NULL;
    int hit = 0, has_var = 0, watch_checked = 0, watch_accessed = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(targs, i);
        int k = tensor_kind(a);
        if (!k)
            continue;
        int c = PySet_Contains(tracked, SLOT(a, OFF_ID));
        if (c < 0)
            goto done;
        if (k == 2)
            has_var = 1;
        if (c) {
            hit = 1;
            continue;
        }
        if (k != 2)
            continue;
        if (!watch_checked) {
            PyObject *w = tape_attr(tape, OFF_T_WATCH, S_watch_accessed);
            if (w == NULL)
                goto done;
            watch_accessed = PyObject_IsTrue(w);
            Py_DECREF(w);
            if (watch_accessed < 0)
                goto done;
            watch_checked = 1;
        }
        if (!watch_accessed)
            continue;
        PyObject *tr = PyObject_GetAttr(a, S_trainable);
        if (tr == NULL)
            goto done;
        int trainable = PyObject_IsTrue(tr);
        Py_DECREF(tr);
        if (trainable < 0)
            goto done;
        if (!trainable)
            continue;
        PyObject *r = PyObject_CallMethodOneArg(tape, S_watch_variable, a);
        if (r == NULL)
            goto done;
        int watched = PyObject_IsTrue(r);
        Py_DECREF(r);
        if (watched < 0)
            goto done;
        if (watched)
            hit = 1;
    }
    if (!hit || f.nondiff) {   /* (variables read by a nondiff op are still watched) */
        ret = Py_NewRef(Py_True);
        goto done;
    }
    zero = PyLong_FromLong(0);
    in_ids = PyTuple_New(n);
    if (zero == NULL || in_ids == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(targs, i);
        PyTuple_SET_ITEM(in_ids, i, Py_NewRef(tensor_kind(a) ? SLOT(a, OFF_ID) : zero));
    }
    if (f.save_in) {
        if (has_var) {
            saved = PyTuple_New(n);
            if (saved == NULL)
                goto done;
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *a = PyTuple_GET_ITEM(targs, i);
                PyObject *sv = tensor_kind(a) == 2 ? snapshot(a) : Py_NewRef(a);
                if (sv == NULL)
                    goto done;
                PyTuple_SET_ITEM(saved, i, sv);
            }
        }
        else
            saved = Py_NewRef(targs);
        if (vals != Py_None && PySequence_Fast_GET_SIZE(vals) == n)
            vtuple = PySequence_Tuple(vals);
        else {
            vtuple = PyTuple_New(n);
            if (vtuple != NULL)
                for (Py_ssize_t i = 0; i < n; i++) {
                    PyObject *a = PyTuple_GET_ITEM(targs, i);
                    PyTuple_SET_ITEM(vtuple, i, Py_NewRef(tensor_kind(a) ? SLOT(a, OFF_VALUE) : a));
                }
        }
        shapes = Py_NewRef(Py_None);
    }
    else {
        saved = Py_NewRef(Py_None);
        vtuple = Py_NewRef(Py_None);
        if (f.broadcasts) {
            shapes = PyTuple_New(n);
            if (shapes == NULL)
                goto done;
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *a = PyTuple_GET_ITEM(targs, i);
                PyObject *sh = tensor_kind(a) ? PyObject_GetAttr(SLOT(a, OFF_VALUE), S_shape)
                                              : Py_NewRef(Py_None);
                if (sh == NULL)
                    goto done;
                PyTuple_SET_ITEM(shapes, i, sh);
            }
        }
        else
            shapes = Py_NewRef(Py_None);
    }
    if (append_entry(tape, tracked, &f, attrs, in_ids, saved, shapes, result, vtuple) < 0)
        goto done;
    ret = Py_NewRef(Py_True);
done:
    Py_XDECREF(tracked);
    Py_XDECREF(in_ids);
    Py_XDECREF(saved);
    Py_XDECREF(shapes);
    Py_XDECREF(vtuple);
    Py_XDECREF(zero);
    return ret;
}

/* --- the op callables ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;    /* the Python function: full checks, named errors */
    PyObject *ufunc_name;  /* unary: the namespace function's name */
    binaryfunc nb;         /* binary: the Python operator */
    int float_only;
    int reflected;         /* binary: called as (self, other), computes op(other, self) */
    int binary;
    OpFlags flags;
    DevCache cache;
} OpFn;


static PyObject *
unary_call(OpFn *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL)
        goto fallback;
    PyObject *x = args[0];
    int kx = tensor_kind(x);
    if (!kx)
        goto fallback;
    PyObject *dev = SLOT(x, OFF_DEVICE), *v = SLOT(x, OFF_VALUE);
    if (dev == NULL || v == NULL)
        goto fallback;
    if (dev != self->cache.dev && devcache_refresh(&self->cache, dev, self->ufunc_name) < 0)
        return NULL;
    if (!self->cache.ok)
        goto fallback;
    if (self->float_only) {
        int k = array_kind(v, NULL);
        if (k < 0) {
            if (recoverable())
                goto fallback;
            return NULL;
        }
        if (k != 'f')
            goto fallback;
    }
    /* The value and device are borrowed from x's slots: another thread may assign a
     * Variable while the array call runs without the GIL, so hold them (and the cached
     * function, which a refresh from another thread may drop) until recorded. */
    Py_INCREF(v);
    Py_INCREF(dev);
    PyObject *func = Py_NewRef(self->cache.func);
    /* the array function's own vectorcall when it has one (NumPy's ufuncs do) */
    vectorcallfunc vc = PyVectorcall_Function(func);
    PyObject *r = vc != NULL ? vc(func, &v, 1, NULL) : PyObject_Vectorcall(func, &v, 1, NULL);
    if (r == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_SystemError, "%R returned NULL without setting an exception", func);
    Py_DECREF(func);
    PyObject *out = NULL;
    if (r != NULL) {
        out = wrap_value(r, dev);
        if (out != NULL) {
            int active = state_active();
            if (active && (active < 0 || record_unary(&self->flags, x, out, v, kx == 1) < 0))
                Py_CLEAR(out);
        }
    }
    Py_DECREF(v);
    Py_DECREF(dev);
    if (r == NULL) {
        if (recoverable())
            goto fallback;
        return NULL;
    }
    return out;
fallback:
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static int
number_ok(PyObject *s, int kind)
{
    if (PyFloat_CheckExact(s))
        return kind == 'f';
    if (PyLong_CheckExact(s))
        return kind == 'f' || kind == 'i' || kind == 'u';
    return 0;
}

static PyObject *
binary_call(OpFn *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL)
        goto fallback;
    PyObject *a = args[self->reflected], *b = args[1 - self->reflected];
    int ta = tensor_kind(a), tb = tensor_kind(b);
    int plain = ta != 2 && tb != 2;
    PyObject *dev, *av, *bv;
    int kind;
    if (ta) {
        dev = SLOT(a, OFF_DEVICE);
        av = SLOT(a, OFF_VALUE);
        if (dev == NULL || av == NULL)
            goto fallback;
        if (tb) {
            bv = SLOT(b, OFF_VALUE);
            if (SLOT(b, OFF_DEVICE) != dev || bv == NULL)
                goto fallback;
            PyObject *da = NULL, *db = NULL;
            kind = array_kind(av, &da);
            if (kind < 0)
                goto error;
            if (Py_TYPE(bv) == NDARRAY_T && OFF_DESCR >= 0)
                db = Py_NewRef(SLOT(bv, OFF_DESCR));
            else
                db = PyObject_GetAttr(bv, S_dtype);
            Py_DECREF(da);
            if (db == NULL)
                goto error;
            Py_DECREF(db);
            if (db != da)
                goto fallback;
        }
        else {
            bv = b;
            kind = array_kind(av, NULL);
            if (kind < 0)
                goto error;
            if (!number_ok(b, kind))
                goto fallback;
        }
    }
    else if (tb) {
        dev = SLOT(b, OFF_DEVICE);
        bv = SLOT(b, OFF_VALUE);
        av = a;
        if (dev == NULL || bv == NULL)
            goto fallback;
        kind = array_kind(bv, NULL);
        if (kind < 0)
            goto error;
        if (!number_ok(a, kind))
            goto fallback;
    }
    else
        goto fallback;
    if (self->float_only && kind != 'f')
        goto fallback;
    if (dev != self->cache.dev && devcache_refresh(&self->cache, dev, NULL) < 0)
        return NULL;
    if (!self->cache.ok)
        goto fallback;
    /* (held across the call and the recording, as in unary_call) */
    Py_INCREF(av);
    Py_INCREF(bv);
    Py_INCREF(dev);
    PyObject *r = self->nb(av, bv);
    PyObject *out = NULL;
    if (r != NULL) {
        out = wrap_value(r, dev);
        if (out != NULL) {
            int active = state_active();
            if (active && (active < 0 ||
                           record_binary(&self->flags, a, b, out, av, bv, plain) < 0))
                Py_CLEAR(out);
        }
    }
    Py_DECREF(av);
    Py_DECREF(bv);
    Py_DECREF(dev);
    if (r == NULL)
        goto error;
    return out;
error:
    if (!recoverable())
        return NULL;
fallback:
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static void
opfn_dealloc(OpFn *self)
{
    Py_XDECREF(self->fallback);
    Py_XDECREF(self->ufunc_name);
    Py_XDECREF(self->flags.op);
    Py_XDECREF(self->cache.dev);
    Py_XDECREF(self->cache.func);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* bound like a function when stored on a class (Tensor.__add__ = add) */
static PyObject *
opfn_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

/* __name__, __doc__, __module__, __qualname__, pickling by reference, ... come from the
 * Python function it stands for */
static PyObject *
opfn_getattro(OpFn *self, PyObject *name)
{
    if (PyUnicode_Check(name)) {
        if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0)
            return Py_NewRef(self->fallback);
        if (PyUnicode_CompareWithASCIIString(name, "__class__") == 0 ||
                PyUnicode_CompareWithASCIIString(name, "__reduce__") == 0 ||
                PyUnicode_CompareWithASCIIString(name, "__reduce_ex__") == 0)
            return PyObject_GenericGetAttr((PyObject *)self, name);
    }
    PyObject *r = PyObject_GetAttr(self->fallback, name);
    if (r != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return r;
    PyErr_Clear();
    return PyObject_GenericGetAttr((PyObject *)self, name);
}

/* pickled by reference, like the function it stands for */
static PyObject *
opfn_reduce(OpFn *self, PyObject *unused)
{
    return PyObject_GetAttrString(self->fallback, "__qualname__");
}

static PyMethodDef opfn_methods[] = {
    {"__reduce__", (PyCFunction)opfn_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *
opfn_repr(OpFn *self)
{
    return PyObject_Repr(self->fallback);
}

static PyTypeObject OpFn_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gradtape._speedups.OpFunction",
    .tp_basicsize = sizeof(OpFn),
    .tp_dealloc = (destructor)opfn_dealloc,
    .tp_vectorcall_offset = offsetof(OpFn, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)opfn_repr,
    .tp_getattro = (getattrofunc)opfn_getattro,
    .tp_descr_get = opfn_get,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_methods = opfn_methods,
    .tp_doc = "An elementwise op with its hot path in C (see __wrapped__).",
};

static OpFn *
opfn_new(PyObject *op, PyObject *fallback, int float_only)
{
    if (!ready())
        return NULL;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "_speedups: fallback must be callable");
        return NULL;
    }
    OpFn *f = PyObject_New(OpFn, &OpFn_Type);
    if (f == NULL)
        return NULL;
    f->fallback = Py_NewRef(fallback);
    f->ufunc_name = NULL;
    f->nb = NULL;
    f->float_only = float_only;
    f->reflected = 0;
    f->binary = 0;
    f->flags.op = NULL;
    f->cache.dev = NULL;
    f->cache.func = NULL;
    f->cache.ok = 0;
    if (read_op_flags(op, &f->flags) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    Py_INCREF(op);
    return f;
}

static PyObject *
mod_unary(PyObject *m, PyObject *args)
{
    PyObject *op, *fallback, *name;
    int float_only;
    if (!PyArg_ParseTuple(args, "OOUp", &op, &fallback, &name, &float_only))
        return NULL;
    OpFn *f = opfn_new(op, fallback, float_only);
    if (f == NULL)
        return NULL;
    f->ufunc_name = Py_NewRef(name);
    f->vectorcall = (vectorcallfunc)unary_call;
    return (PyObject *)f;
}

static PyObject *
mod_binary(PyObject *m, PyObject *args)
{
    PyObject *op, *fallback;
    const char *pyop;
    int float_only, reflected;
    if (!PyArg_ParseTuple(args, "OOspp", &op, &fallback, &pyop, &float_only, &reflected))
        return NULL;
    binaryfunc nb;
    if (strcmp(pyop, "add") == 0)
        nb = PyNumber_Add;
    else if (strcmp(pyop, "sub") == 0)
        nb = PyNumber_Subtract;
    else if (strcmp(pyop, "mul") == 0)
        nb = PyNumber_Multiply;
    else if (strcmp(pyop, "truediv") == 0)
        nb = PyNumber_TrueDivide;
    else {
        PyErr_Format(PyExc_ValueError, "_speedups.binary: unknown operator %s", pyop);
        return NULL;
    }
    OpFn *f = opfn_new(op, fallback, float_only);
    if (f == NULL)
        return NULL;
    f->nb = nb;
    f->reflected = reflected;
    f->binary = 1;
    f->vectorcall = (vectorcallfunc)binary_call;
    return (PyObject *)f;
}

/* --- the backward sweep's common case ------------------------------------------------------ */

/* (True,), and the four (need0, need1) pairs at 4 + 2 * need0 + need1 */
static PyObject *NEEDS[8];

/* 1 when two NumPy arrays have the same shape, 0 when not, -1 when either is no ndarray */
static int
same_shape_fast(PyObject *a, PyObject *b)
{
    if (OFF_DESCR < 0 || Py_TYPE(a) != NDARRAY_T || Py_TYPE(b) != NDARRAY_T)
        return -1;
    ArrayHead *x = (ArrayHead *)a, *y = (ArrayHead *)b;
    if (x->nd != y->nd)
        return 0;
    for (int i = 0; i < x->nd; i++)
        if (x->dimensions[i] != y->dimensions[i])
            return 0;
    return 1;
}

/* --- gradient rules run here ----------------------------------------------------------
 *
 * The sweep's rules are Python functions; for the few that every training step and chain of
 * elementwise ops runs, the sweep does what the function does itself, with the same array
 * operations in the same order (so the same numbers), and without its Python frame. Each is
 * bound by the identity of the rule function (set_rule(name, function)): a rule replaced at
 * run time goes back to being called.
 *
 * A cotangent that nothing else can see (sole_array) is multiplied in place by the rules that
 * multiply it, which saves one array of the output's size per op. */
enum { R_NONE, R_ADD, R_SUB, R_MUL, R_NEG, R_TANH, R_RELU, R_COUNT };
static const char *RULE_NAMES[R_COUNT] = {"", "add", "subtract", "multiply", "negative",
                                          "tanh", "relu"};
static PyObject *RULE_FN[R_COUNT];

static inline int
rule_code(PyObject *vjp)
{
    for (int c = 1; c < R_COUNT; c++)
        if (RULE_FN[c] == vjp)
            return c;
    return R_NONE;
}

/* Is ``g`` (with one reference, the caller's) an array no one else can see? */
static int
sole_array(PyObject *g)
{
    if (Py_REFCNT(g) != 1 || OFF_DESCR < 0 || Py_TYPE(g) != NDARRAY_T)
        return 0;
    ArrayHead *a = (ArrayHead *)g;
    /* (no weak references: a cache could hand it out again; not 0-d: ``g * f`` of 0-d
     * arrays gives a NumPy scalar, ``g *= f`` the array) */
    return a->base == NULL && a->weakreflist == NULL && a->nd > 0 &&
           (a->flags & (ARRAY_OWNDATA | ARRAY_WRITEABLE)) == (ARRAY_OWNDATA | ARRAY_WRITEABLE);
}

static unsigned long long N_IN_PLACE = 0;   /* (for the tests) */

/* ``g * f`` (new reference); in place in g when g is sole and f is an array of g's dtype and
 * shape or a Python number (the result is then g's dtype and shape either way). */
static PyObject *
times(PyObject *g, PyObject *f, int sole, int bool_ok)
{
    if (sole && (PyFloat_CheckExact(f) || PyLong_CheckExact(f) ||
                 (Py_TYPE(f) == NDARRAY_T && same_shape_fast(f, g) == 1 &&
                  (SLOT(f, OFF_DESCR) == SLOT(g, OFF_DESCR) ||
                   (bool_ok && array_kind(f, NULL) == 'b'))))) {
        N_IN_PLACE++;
        return PyNumber_InPlaceMultiply(g, f);
    }
    return PyNumber_Multiply(g, f);
}

/* The rule ``code``'s gradients as a tuple (new reference), NULL on error. ``x``, ``y`` are
 * the saved inputs (NULL when not saved), ``ans`` the saved output (Py_None when not). */
static PyObject *
run_rule(int code, PyObject *g, PyObject *ans, PyObject *x, PyObject *y, const int *need,
         int sole)
{
    PyObject *a = NULL, *b = NULL, *t = NULL, *u = NULL;
    switch (code) {
    case R_ADD:            /* (g, g) */
        return PyTuple_Pack(2, g, g);
    case R_SUB:            /* (g, -g if needs[1] else None) */
        if (!need[1])
            return PyTuple_Pack(2, g, Py_None);
        b = PyNumber_Negative(g);
        if (b == NULL)
            return NULL;
        a = PyTuple_Pack(2, g, b);
        Py_DECREF(b);
        return a;
    case R_MUL:            /* (g * y if needs[0] else None, g * x if needs[1] else None) */
        if (need[0] && need[1]) {
            a = PyNumber_Multiply(g, y);
            b = a ? PyNumber_Multiply(g, x) : NULL;
        }
        else if (need[0])
            a = times(g, y, sole, 0);
        else if (need[1])
            b = times(g, x, sole, 0);
        if ((need[0] && a == NULL) || (need[1] && b == NULL)) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            return NULL;
        }
        t = PyTuple_Pack(2, a ? a : Py_None, b ? b : Py_None);
        Py_XDECREF(a);
        Py_XDECREF(b);
        return t;
    case R_NEG:            /* (-g,) */
        a = PyNumber_Negative(g);
        break;
    case R_TANH:           /* (g * (1 - ans * ans),) */
        t = PyNumber_Multiply(ans, ans);
        u = t ? PyNumber_Subtract(INT_ONE, t) : NULL;
        a = u ? times(g, u, sole, 0) : NULL;
        Py_XDECREF(t);
        Py_XDECREF(u);
        break;
    case R_RELU:           /* (relu_grad(g, ans),) = (g * (ans > 0),) */
        t = PyObject_RichCompare(ans, INT_ZERO, Py_GT);
        a = t ? times(g, t, sole, 1) : NULL;
        Py_XDECREF(t);
        break;
    default:
        PyErr_SetString(PyExc_SystemError, "_speedups: unknown rule");
        return NULL;
    }
    if (a == NULL)
        return NULL;
    t = PyTuple_Pack(1, a);
    Py_DECREF(a);
    return t;
}

/* grads[iid] accumulation, as tape._backward does it */
static int
accumulate(PyObject *grads, PyObject *owned, PyObject *iid, PyObject *gi)
{
    PyObject *prev = PyDict_GetItemWithError(grads, iid);
    if (prev == NULL) {
        if (PyErr_Occurred())
            return -1;
        return PyDict_SetItem(grads, iid, gi);
    }
    int own = PySet_Contains(owned, iid);
    if (own < 0)
        return -1;
    Py_INCREF(prev);
    PyObject *sum = own ? PyNumber_InPlaceAdd(prev, gi) : PyNumber_Add(prev, gi);
    Py_DECREF(prev);
    if (sum == NULL)
        return -1;
    int rc = PyDict_SetItem(grads, iid, sum);
    Py_DECREF(sum);
    if (rc < 0)
        return -1;
    return own ? 0 : PySet_Add(owned, iid);
}

/* sweep(entries, order, grads, keep, reach, owned, free, ops_for, sum_to, general)
 *
 * Walks order backwards. Entries with one output, one or two inputs, a rule and not multi
 * are done here on raw arrays; others go to general(idx, entry, ops). ops_for(device) gives
 * the raw namespace, sum_to(ops, g, shape, ()) sums a broadcast gradient down. */
static PyObject *
mod_sweep(PyObject *m, PyObject *args)
{
    PyObject *entries, *order, *grads, *keep, *reach, *owned, *ops_for, *sum_to, *general;
    int free_;
    if (!PyArg_ParseTuple(args, "O!OO!O!O!O!pOOO", &PyList_Type, &entries, &order,
                          &PyDict_Type, &grads, &PySet_Type, &keep, &PySet_Type, &reach,
                          &PySet_Type, &owned, &free_, &ops_for, &sum_to, &general))
        return NULL;
    PyObject *seq = PySequence_Fast(order, "sweep: order must be a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *last_dev = NULL, *ops = NULL, *empty = PyTuple_New(0);
    PyObject *result = NULL;
    if (empty == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t j = n - 1; j >= 0; j--) {
        PyObject *idxo = PySequence_Fast_GET_ITEM(seq, j);
        Py_ssize_t idx = PyLong_AsSsize_t(idxo);
        if (idx == -1 && PyErr_Occurred())
            goto done;
        if (idx < 0 || idx >= PyList_GET_SIZE(entries)) {
            PyErr_SetString(PyExc_IndexError, "sweep: entry index out of range");
            goto done;
        }
        PyObject *e = PyList_GET_ITEM(entries, idx);
        if (e == Py_None)
            continue;
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 9) {
            PyErr_SetString(PyExc_TypeError, "sweep: malformed tape entry");
            goto done;
        }
        Py_INCREF(e);
        PyObject *op = PyTuple_GET_ITEM(e, 0), *attrs = PyTuple_GET_ITEM(e, 1);
        PyObject *in_ids = PyTuple_GET_ITEM(e, 2), *shapes = PyTuple_GET_ITEM(e, 4);
        PyObject *out_ids = PyTuple_GET_ITEM(e, 5), *outs = PyTuple_GET_ITEM(e, 6);
        PyObject *dev = PyTuple_GET_ITEM(e, 7), *vals = PyTuple_GET_ITEM(e, 8);
        if (dev != last_dev) {
            PyObject *o = PyObject_CallOneArg(ops_for, dev);
            if (o == NULL) {
                Py_DECREF(e);
                goto done;
            }
            Py_XSETREF(ops, o);
            Py_XSETREF(last_dev, Py_NewRef(dev));
        }
        Py_ssize_t n_in = PyTuple_Check(in_ids) ? PyTuple_GET_SIZE(in_ids) : -1;
        int is_op = PyObject_TypeCheck(op, Op_T);
        PyObject *vjp = is_op ? SLOT(op, OFF_OP_VJP) : NULL;
        PyObject *multi = is_op ? SLOT(op, OFF_OP_MULTI) : NULL;
        int fast = n_in >= 1 && n_in <= 2 && vjp != NULL && vjp != Py_None &&
                   (attrs == Py_None || PyDict_Check(attrs)) &&
                   (outs == Py_None || (PyTuple_Check(outs) && PyTuple_GET_SIZE(outs) >= 1 &&
                                        PyObject_TypeCheck(PyTuple_GET_ITEM(outs, 0), Tensor_T) &&
                                        SLOT(PyTuple_GET_ITEM(outs, 0), OFF_VALUE) != NULL)) &&
                   multi == Py_False && PyTuple_Check(out_ids) &&
                   PyTuple_GET_SIZE(out_ids) == 1 &&
                   (vals == Py_None || ((PyTuple_Check(vals) || PyList_Check(vals)) &&
                                        PySequence_Fast_GET_SIZE(vals) == n_in));
        if (!fast) {
            PyObject *r = PyObject_CallFunction(general, "nOO", idx, e, ops);
            Py_DECREF(e);
            if (r == NULL)
                goto done;
            Py_DECREF(r);
            continue;
        }
        PyObject *oid = PyTuple_GET_ITEM(out_ids, 0);
        PyObject *g = PyDict_GetItemWithError(grads, oid);
        if (g == NULL || g == Py_None) {
            /* no cotangent: skip (a None one is popped, as the Python loop does) */
            int err = g == NULL ? PyErr_Occurred() != NULL : PyDict_DelItem(grads, oid) < 0;
            Py_DECREF(e);
            if (err)
                goto done;
            continue;
        }
        Py_INCREF(g);
        int kept = PySet_Contains(keep, oid);   /* popped unless kept */
        if (kept < 0 || (!kept && PyDict_DelItem(grads, oid) < 0)) {
            Py_DECREF(g);
            Py_DECREF(e);
            goto done;
        }
        PyObject *ans = outs == Py_None ? Py_None : SLOT(PyTuple_GET_ITEM(outs, 0), OFF_VALUE);
        int need[2] = {1, 0};
        if (n_in == 2) {
            for (int k = 0; k < 2; k++) {
                need[k] = PySet_Contains(reach, PyTuple_GET_ITEM(in_ids, k));
                if (need[k] < 0) {
                    Py_DECREF(g);
                    Py_DECREF(e);
                    goto done;
                }
            }
        }
        PyObject *needs = n_in == 1 ? NEEDS[3] : NEEDS[need[0] * 2 + need[1] + 4];
        PyObject *stack[6] = {ops, needs, g, ans, Py_None, Py_None};
        if (vals != Py_None)
            for (Py_ssize_t k = 0; k < n_in; k++)
                stack[4 + k] = PySequence_Fast_GET_ITEM(vals, k);
        PyObject *in_grads;
        int has_attrs = attrs != Py_None && PyDict_Check(attrs) && PyDict_GET_SIZE(attrs);
        int code = has_attrs ? R_NONE : rule_code(vjp);
        if (code == R_ADD || code == R_SUB || code == R_NEG)
            code = n_in == (code == R_NEG ? 1 : 2) ? code : R_NONE;
        else if (code == R_MUL)
            code = n_in == 2 && vals != Py_None ? code : R_NONE;
        else if (code != R_NONE)
            code = n_in == 1 && ans != Py_None ? code : R_NONE;
        if (code != R_NONE)
            /* g: the sweep's reference, plus the dict's when kept */
            in_grads = run_rule(code, g, ans, vals == Py_None ? NULL : stack[4],
                                vals == Py_None || n_in < 2 ? NULL : stack[5], need,
                                sole_array(g));
        else if (has_attrs)
            in_grads = PyObject_VectorcallDict(vjp, stack, 4 + n_in, attrs);
        else
            in_grads = PyObject_Vectorcall(vjp, stack, 4 + n_in, NULL);
        Py_DECREF(g);
        if (in_grads == NULL) {
            Py_DECREF(e);
            goto done;
        }
        PyObject *gs = PySequence_Fast(in_grads, "gradient rule must return a sequence");
        Py_DECREF(in_grads);
        if (gs == NULL) {
            Py_DECREF(e);
            goto done;
        }
        if (PySequence_Fast_GET_SIZE(gs) < n_in) {
            PyErr_Format(PyExc_ValueError, "gradient rule of op %R returned %zd gradients "
                         "for %zd inputs", op, PySequence_Fast_GET_SIZE(gs), n_in);
            Py_DECREF(gs);
            Py_DECREF(e);
            goto done;
        }
        PyObject *bc = SLOT(op, OFF_OP_BROADCASTS);
        int broadcasts = bc == NULL ? 0 : PyObject_IsTrue(bc);
        int failed = broadcasts < 0;
        for (Py_ssize_t k = 0; k < n_in && !failed; k++) {
            PyObject *gi = PySequence_Fast_GET_ITEM(gs, k);
            if (gi == Py_None || !need[k])
                continue;
            Py_INCREF(gi);
            if (broadcasts) {
                /* sum a broadcast gradient down to its input's shape */
                PyObject *val = vals == Py_None ? NULL : PySequence_Fast_GET_ITEM(vals, k);
                int same = val ? same_shape_fast(gi, val) : -1;  /* -1: not known */
                PyObject *shape = NULL;
                if (same != 1) {
                    if (val != NULL)
                        shape = PyObject_GetAttr(val, S_shape);
                    else if (PyTuple_Check(shapes) && PyTuple_GET_SIZE(shapes) > k)
                        shape = Py_NewRef(PyTuple_GET_ITEM(shapes, k));
                    else
                        PyErr_SetString(PyExc_TypeError, "sweep: entry without shapes");
                    if (shape == NULL)
                        same = -2;
                    else if (same < 0) {
                        PyObject *gshape = PyObject_GetAttr(gi, S_shape);
                        same = gshape ? PyObject_RichCompareBool(gshape, shape, Py_EQ) : -2;
                        if (same < 0)
                            same = -2;
                        Py_XDECREF(gshape);
                    }
                }
                if (same == 0) {
                    PyObject *tshape = PySequence_Tuple(shape);
                    PyObject *r = tshape ? PyObject_CallFunctionObjArgs(
                        sum_to, ops, gi, tshape, empty, NULL) : NULL;
                    Py_XDECREF(tshape);
                    Py_DECREF(gi);
                    gi = r;
                }
                Py_XDECREF(shape);
                if (same == -2 || gi == NULL) {
                    Py_XDECREF(gi);
                    failed = 1;
                    break;
                }
            }
            if (accumulate(grads, owned, PyTuple_GET_ITEM(in_ids, k), gi) < 0)
                failed = 1;
            Py_DECREF(gi);
        }
        Py_DECREF(gs);
        if (!failed && free_) {
            Py_INCREF(Py_None);
            if (PyList_SetItem(entries, idx, Py_None) < 0)
                failed = 1;
        }
        Py_DECREF(e);
        if (failed)
            goto done;
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(empty);
    Py_XDECREF(ops);
    Py_XDECREF(last_dev);
    Py_DECREF(seq);
    return result;
}

/* --- module functions ------------------------------------------------------------------- */

static PyObject *
mod_setup(PyObject *m, PyObject *args)
{
    PyObject *tensor, *variable, *state, *tls, *tstate_type, *op_type, *slow;
    if (!PyArg_ParseTuple(args, "O!O!OOO!O!O", &PyType_Type, &tensor, &PyType_Type, &variable,
                          &state, &tls, &PyType_Type, &tstate_type, &PyType_Type, &op_type,
                          &slow))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)variable, (PyTypeObject *)tensor) ||
            slot_offset(variable, "_value") != slot_offset(tensor, "_value")) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "_speedups.setup: Variable must subclass Tensor");
        return NULL;
    }
    Py_ssize_t v = slot_offset(tensor, "_value"), d = slot_offset(tensor, "_device"),
               i = slot_offset(tensor, "_id");
    Py_ssize_t a = slot_offset((PyObject *)Py_TYPE(state), "active"),
               c = slot_offset((PyObject *)Py_TYPE(state), "check_numerics");
    Py_ssize_t t = slot_offset(tstate_type, "tapes"), ac = slot_offset(tstate_type, "accumulators");
    Py_ssize_t ov = slot_offset(op_type, "vjp"), om = slot_offset(op_type, "multi"),
               ob = slot_offset(op_type, "broadcasts"), on = slot_offset(op_type, "nondiff"),
               osi = slot_offset(op_type, "save_inputs"), oso = slot_offset(op_type, "save_output");
    if (PyErr_Occurred())
        return NULL;
    Py_XSETREF(Tensor_T, (PyTypeObject *)Py_NewRef(tensor));
    Py_XSETREF(Variable_T, (PyTypeObject *)Py_NewRef(variable));
    Py_XSETREF(Op_T, (PyTypeObject *)Py_NewRef(op_type));
    Py_XSETREF(TState_T, (PyTypeObject *)Py_NewRef(tstate_type));
    OFF_VALUE = v; OFF_DEVICE = d; OFF_ID = i;
    Py_XSETREF(STATE, Py_NewRef(state));
    OFF_ACTIVE = a; OFF_CHECKNUM = c;
    Py_XSETREF(TLS, Py_NewRef(tls));
    OFF_TAPES = t; OFF_ACCS = ac;
    OFF_OP_VJP = ov; OFF_OP_MULTI = om; OFF_OP_BROADCASTS = ob; OFF_OP_NONDIFF = on;
    OFF_OP_SAVE_IN = osi; OFF_OP_SAVE_OUT = oso;
    Py_XSETREF(SLOW_PATH, Py_NewRef(slow));
    /* (a second setup, after gradtape is imported again, binds the new classes; the first
     * Tensor class keeps the deallocator, the new one CPython's) */
    Py_CLEAR(CACHED_STATE);
    /* Thread states are cached per OS thread only when the thread-local is the interpreter's
     * own: a patched one (gevent, eventlet) is per greenlet, and greenlets share a thread. */
    CACHE_STATE = 0;
    PyObject *thread_mod = PyImport_ImportModule("_thread");
    if (thread_mod == NULL)
        return NULL;
    PyObject *local_type = PyObject_GetAttrString(thread_mod, "_local");
    Py_DECREF(thread_mod);
    if (local_type == NULL)
        return NULL;
    CACHE_STATE = (PyObject *)Py_TYPE(tls) == local_type;
    Py_DECREF(local_type);
    if (INSTALLED_T == NULL && !getenv_flag("GRADTAPE_GENERIC_DEALLOC") &&
            tensor_layout_ok(Tensor_T, Variable_T)) {
        INSTALLED_T = (PyTypeObject *)Py_NewRef(Tensor_T);
        Tensor_T->tp_dealloc = tensor_dealloc;
        PyType_Modified(Tensor_T);
    }
    Py_RETURN_NONE;
}

/* use_ndarray(ndarray_type, samples): read NumPy dtypes from the array struct, after checking
 * on each sample array that the struct's descr is its dtype. Returns whether it is used. */
static PyObject *
mod_use_ndarray(PyObject *m, PyObject *args)
{
    PyObject *type, *samples;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &type, &samples))
        return NULL;
    PyObject *seq = PySequence_Fast(samples, "use_ndarray: samples must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t off = offsetof(ArrayHead, descr);
    int ok = ((PyTypeObject *)type)->tp_basicsize >= (Py_ssize_t)sizeof(ArrayHead) &&
             PySequence_Fast_GET_SIZE(seq) > 0;
    for (Py_ssize_t i = 0; ok && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *a = PySequence_Fast_GET_ITEM(seq, i);
        if (Py_TYPE(a) != (PyTypeObject *)type) {
            ok = 0;
            break;
        }
        PyObject *d = PyObject_GetAttr(a, S_dtype);
        if (d == NULL) {
            Py_DECREF(seq);
            return NULL;
        }
        ok = SLOT(a, off) == d;
        Py_DECREF(d);
        /* the flags word: OWNDATA and WRITEABLE as a.flags says */
        PyObject *fl = ok ? PyObject_GetAttrString(a, "flags") : NULL;
        if (ok && fl == NULL) {
            Py_DECREF(seq);
            return NULL;
        }
        const char *names[2] = {"owndata", "writeable"};
        int bits[2] = {ARRAY_OWNDATA, ARRAY_WRITEABLE};
        for (int b = 0; ok && b < 2; b++) {
            PyObject *v = PyObject_GetAttrString(fl, names[b]);
            int t = v == NULL ? -1 : PyObject_IsTrue(v);
            Py_XDECREF(v);
            if (t < 0) {
                Py_DECREF(fl);
                Py_DECREF(seq);
                return NULL;
            }
            ok = t == ((((ArrayHead *)a)->flags & bits[b]) != 0);
        }
        Py_XDECREF(fl);
        /* the weak reference list: empty, then the weak reference made here */
        if (ok) {
            PyObject **wl = &((ArrayHead *)a)->weakreflist;
            ok = *wl == NULL;
            PyObject *wr = ok ? PyWeakref_NewRef(a, NULL) : NULL;
            if (ok && wr == NULL) {
                Py_DECREF(seq);
                return NULL;
            }
            ok = ok && *wl == wr;
            Py_XDECREF(wr);
            ok = ok && *wl == NULL;
        }
    }
    Py_DECREF(seq);
    if (ok) {
        Py_XSETREF(NDARRAY_T, (PyTypeObject *)Py_NewRef(type));
        OFF_DESCR = off;
    }
    else
        OFF_DESCR = -1;
    return PyBool_FromLong(ok);
}

/* bind_tape(GradientTape): read the tape's _entries, _tracked and _watch_accessed from their
 * slots. */
static PyObject *
mod_bind_tape(PyObject *m, PyObject *cls)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "bind_tape(GradientTape class)");
        return NULL;
    }
    Py_ssize_t e = slot_offset(cls, "_entries"), t = slot_offset(cls, "_tracked"),
               w = slot_offset(cls, "_watch_accessed");
    if (PyErr_Occurred())
        return NULL;
    Py_XSETREF(TAPE_T, (PyTypeObject *)Py_NewRef(cls));
    OFF_T_ENTRIES = e; OFF_T_TRACKED = t; OFF_T_WATCH = w;
    Py_RETURN_NONE;
}

/* set_rule(name, function): the sweep runs rule ``name`` itself when an op's rule is
 * ``function`` (None unbinds it). */
static PyObject *
mod_set_rule(PyObject *m, PyObject *args)
{
    const char *name;
    PyObject *fn;
    if (!PyArg_ParseTuple(args, "sO", &name, &fn))
        return NULL;
    for (int c = 1; c < R_COUNT; c++)
        if (strcmp(name, RULE_NAMES[c]) == 0) {
            Py_XSETREF(RULE_FN[c], fn == Py_None ? NULL : Py_NewRef(fn));
            Py_RETURN_NONE;
        }
    PyErr_Format(PyExc_ValueError, "set_rule: no rule named %R", PyTuple_GET_ITEM(args, 0));
    return NULL;
}

static PyObject *
mod_in_place_count(PyObject *m, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(N_IN_PLACE);
}

static PyObject *
mod_fast_dealloc(PyObject *m, PyObject *unused)
{
    return PyBool_FromLong(INSTALLED_T != NULL && INSTALLED_T == Tensor_T);
}

static PyObject *
mod_next_id(PyObject *m, PyObject *unused)
{
    return new_id();
}

static PyObject *
mod_wrap(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "wrap(value, device)");
        return NULL;
    }
    if (!ready())
        return NULL;
    return wrap_value(Py_NewRef(args[0]), args[1]);
}

/* ---- optimizer updates on host arrays, one pass per variable ---------------------------------
 *
 * adam(p, g, m, v, out, c1, c2, eps, alpha, decay, lr) and
 * sgd(p, g, mom, out, lr, momentum, nesterov) compute, element by element and in the dtype of
 * the arrays (float32 or float64), exactly the array operations of Adam._update and
 * SGD._update, in the same order with the same roundings (each Python float is rounded to
 * the arrays' dtype first, as NumPy does with a Python scalar): the result is bit-identical
 * to the NumPy update (but for the payload and sign of a NaN, which neither C nor NumPy
 * fixes), read once and written once instead of nine passes over memory. Like every op on
 * a device, it raises no NumPy floating-point warnings.
 * ``m``, ``v`` and ``mom`` are updated in place; the new parameter goes to ``out`` (a fresh
 * array: tapes may hold the old buffer). Every array must be C-contiguous, of one dtype and
 * one size; ``out`` must not overlap the others. */

#define HOSTK_MAX 5

typedef struct {
    Py_buffer b[HOSTK_MAX];
    int n;
} Views;

static void
views_release(Views *vs)
{
    for (int i = 0; i < vs->n; i++)
        PyBuffer_Release(&vs->b[i]);
    vs->n = 0;
}

/* C-contiguous buffers (with their format) of objs[0 .. count), writeable where bit i of
 * ``writable`` is set. Returns count, or the index of the object that gave none, with the
 * buffers taken before it released and an exception set. */
static int
views_acquire(Views *vs, PyObject *const *objs, int count, unsigned writable)
{
    vs->n = 0;
    for (int i = 0; i < count; i++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | ((writable >> i) & 1 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &vs->b[i], flags) < 0) {
            views_release(vs);
            return i;
        }
        vs->n++;
    }
    return count;
}

/* Buffers of ``objs`` (the first ``n_read`` read-only), all C-contiguous, one format 'f' or
 * 'd', one length; returns the format character or 0 with an exception set. */
static char
views_get(Views *vs, const char *fn, const char *const *names, PyObject *const *objs,
          int count, int n_read)
{
    int bad = views_acquire(vs, objs, count, ~0u << n_read);
    if (bad < count) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a C-contiguous%s float32 or float64 "
                     "array", fn, names[bad], bad < n_read ? "" : ", writeable");
        return 0;
    }
    const char *f0 = vs->b[0].format;
    char kind = (f0 != NULL && (f0[0] == 'f' || f0[0] == 'd') && f0[1] == '\0') ? f0[0] : 0;
    if (kind == 0) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be float32 or float64, got format %s", fn,
                     names[0], f0 ? f0 : "B");
        views_release(vs);
        return 0;
    }
    for (int i = 1; i < count; i++) {
        const char *f = vs->b[i].format;
        if (f == NULL || f[0] != kind || f[1] != '\0' || vs->b[i].len != vs->b[0].len) {
            PyErr_Format(PyExc_ValueError, "%s: %s must have the dtype and size of %s "
                         "(%zd bytes of %s; got %zd bytes of %s)", fn, names[i], names[0],
                         vs->b[0].len, f0, vs->b[i].len, f ? f : "B");
            views_release(vs);
            return 0;
        }
    }
    /* out (the last) is a fresh array: it must share no memory with the others */
    const char *o = (const char *)vs->b[count - 1].buf;
    Py_ssize_t len = vs->b[0].len;
    for (int i = 0; i < count - 1; i++) {
        const char *a = (const char *)vs->b[i].buf;
        if (len && a < o + len && o < a + len) {
            PyErr_Format(PyExc_ValueError, "%s: %s overlaps %s", fn, names[count - 1],
                         names[i]);
            views_release(vs);
            return 0;
        }
    }
    return kind;
}

#define ADAM_LOOP(T, SQRT)                                                                  \
    do {                                                                                    \
        const T *p = (const T *)vs.b[0].buf, *g = (const T *)vs.b[1].buf;                  \
        T *m = (T *)vs.b[2].buf, *v = (T *)vs.b[3].buf, *out = (T *)vs.b[4].buf;           \
        const T c1 = (T)c1d, c2 = (T)c2d, eps = (T)epsd, alpha = (T)alphad;                \
        const T decay = (T)decayd, lr = (T)lrd;                                             \
        for (Py_ssize_t i = 0; i < n; i++) {                                                \
            T pi = p[i], gi = g[i], t;                                                      \
            if (use_decay) {                                                                \
                t = pi * decay;                                                             \
                t = t * lr;                                                                 \
                pi = pi - t;                                                                \
            }                                                                               \
            t = gi - m[i];                                                                  \
            t = t * c1;                                                                     \
            const T mi = m[i] + t;                                                          \
            m[i] = mi;                                                                      \
            t = gi * gi;                                                                    \
            t = t - v[i];                                                                   \
            t = t * c2;                                                                     \
            const T vi = v[i] + t;                                                          \
            v[i] = vi;                                                                      \
            t = SQRT(vi);                                                                   \
            t = t + eps;                                                                    \
            t = mi / t;                                                                     \
            t = t * alpha;                                                                  \
            out[i] = pi - t;                                                                \
        }                                                                                   \
    } while (0)

static PyObject *
mod_adam(PyObject *Py_UNUSED(mod), PyObject *args)
{
    static const char *const names[] = {"p", "g", "m", "v", "out"};
    PyObject *objs[5];
    double c1d, c2d, epsd, alphad, decayd, lrd;
    if (!PyArg_ParseTuple(args, "OOOOOdddddd:adam", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &c1d, &c2d, &epsd, &alphad, &decayd, &lrd))
        return NULL;
    Views vs;
    char kind = views_get(&vs, "adam", names, objs, 5, 2);
    if (kind == 0)
        return NULL;
    const int use_decay = decayd != 0.0;
    if (kind == 'f') {
        Py_ssize_t n = vs.b[0].len / (Py_ssize_t)sizeof(float);
        Py_BEGIN_ALLOW_THREADS
        ADAM_LOOP(float, sqrtf);
        Py_END_ALLOW_THREADS
    }
    else {
        Py_ssize_t n = vs.b[0].len / (Py_ssize_t)sizeof(double);
        Py_BEGIN_ALLOW_THREADS
        ADAM_LOOP(double, sqrt);
        Py_END_ALLOW_THREADS
    }
    views_release(&vs);
    Py_RETURN_NONE;
}

#define SGD_LOOP(T)                                                                         \
    do {                                                                                    \
        const T *p = (const T *)vs.b[0].buf, *g = (const T *)vs.b[1].buf;                  \
        T *mom = (T *)vs.b[2].buf, *out = (T *)vs.b[3].buf;                                \
        const T lr = (T)lrd, mu = (T)mud, minus_one = (T)-1;                                \
        for (Py_ssize_t i = 0; i < n; i++) {                                                \
            T step = g[i] * lr;                                                             \
            T mi = mom[i] * mu;                                                             \
            mi = mi - step;                                                                 \
            mom[i] = mi;                                                                    \
            if (nesterov) {                                                                 \
                step = step * minus_one;                                                    \
                step = step + mi * mu;                                                      \
                out[i] = p[i] + step;                                                       \
            }                                                                               \
            else                                                                            \
                out[i] = p[i] + mi;                                                         \
        }                                                                                   \
    } while (0)

static PyObject *
mod_sgd(PyObject *Py_UNUSED(mod), PyObject *args)
{
    static const char *const names[] = {"p", "g", "momentum", "out"};
    PyObject *objs[4];
    double lrd, mud;
    int nesterov;
    if (!PyArg_ParseTuple(args, "OOOOddp:sgd", &objs[0], &objs[1], &objs[2], &objs[3], &lrd,
                          &mud, &nesterov))
        return NULL;
    Views vs;
    char kind = views_get(&vs, "sgd", names, objs, 4, 2);
    if (kind == 0)
        return NULL;
    if (kind == 'f') {
        Py_ssize_t n = vs.b[0].len / (Py_ssize_t)sizeof(float);
        Py_BEGIN_ALLOW_THREADS
        SGD_LOOP(float);
        Py_END_ALLOW_THREADS
    }
    else {
        Py_ssize_t n = vs.b[0].len / (Py_ssize_t)sizeof(double);
        Py_BEGIN_ALLOW_THREADS
        SGD_LOOP(double);
        Py_END_ALLOW_THREADS
    }
    views_release(&vs);
    Py_RETURN_NONE;
}

/* ---- window ops on host arrays: convolution patches ---------------------------------------
 *
 * im2col(x, p, n0, r0, sh, sw, dh, dw, pt, pl) fills the patches p[b, r, q, i, j, :] of the
 * NHWC array x: x[n0 + b, ih, iw, :] with ih = (r0 + r) * sh - pt + i * dh and
 * iw = q * sw - pl + j * dw, zeros where that falls outside x (the padding). col2im_add(dx,
 * dp, ...) adds such patch gradients back into dx, tap by tap in row-major order (the
 * order, and so the roundings, of ops/nn.py's NumPy loop). Plain copies and adds of the
 * arrays' dtype: the results are those of the NumPy loops, without their per-tap strided
 * copies of a few channels each. */

typedef struct {
    Py_ssize_t n0, r0, sh, sw, dh, dw, pt, pl;
} WinGeo;

/* (2^40 * 2^20 products and their sums fit a 64-bit Py_ssize_t; 32-bit builds: smaller) */
#if SIZEOF_SIZE_T >= 8
#define WIN_DIM_MAX ((Py_ssize_t)1 << 40)
#define WIN_STEP_MAX ((Py_ssize_t)1 << 20)
#else
#define WIN_DIM_MAX ((Py_ssize_t)1 << 14)
#define WIN_STEP_MAX ((Py_ssize_t)1 << 14)
#endif

/* every dimension of a window op's buffer within WIN_DIM_MAX */
static int
win_dims_ok(const Py_buffer *v, const char *fn)
{
    for (int d = 0; d < v->ndim; d++)
        if (v->shape[d] > WIN_DIM_MAX) {
            PyErr_Format(PyExc_ValueError, "%s: an array dimension is too large", fn);
            return 0;
        }
    return 1;
}

/* ``count`` integers of ``args`` from ``first`` into ``out``; 0 with an exception set */
static int
parse_ssizes(PyObject *args, Py_ssize_t first, int count, Py_ssize_t *const *out)
{
    for (int k = 0; k < count; k++) {
        *out[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, first + k));
        if (*out[k] == -1 && PyErr_Occurred())
            return 0;
    }
    return 1;
}

static int
win_geo(PyObject *args, Py_ssize_t first, WinGeo *g)
{
    Py_ssize_t *const f[8] = {&g->n0, &g->r0, &g->sh, &g->sw, &g->dh, &g->dw, &g->pt, &g->pl};
    if (!parse_ssizes(args, first, 8, f))
        return 0;
    /* bounded so that no index computation can overflow (with dims <= WIN_DIM_MAX) */
    if (g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1 || g->sh > WIN_STEP_MAX ||
        g->sw > WIN_STEP_MAX || g->dh > WIN_STEP_MAX || g->dw > WIN_STEP_MAX ||
        g->pt < -WIN_STEP_MAX || g->pt > WIN_STEP_MAX || g->pl < -WIN_STEP_MAX ||
        g->pl > WIN_STEP_MAX || g->n0 < 0 || g->r0 < 0 || g->n0 > WIN_DIM_MAX ||
        g->r0 > WIN_DIM_MAX) {
        PyErr_SetString(PyExc_ValueError, "window geometry out of range");
        return 0;
    }
    return 1;
}

/* The common entry of the patch loops: ``usage`` when the argument count is off, the
 * geometry into ``g``, the views of an x-like (4-D) array and its patches (6-D) of one format
 * in vs->b[0] and vs->b[1], the patches within x's images. 0 with an exception set (and
 * nothing held). */
static int
win_begin(const char *fn, const char *usage, PyObject *args, WinGeo *g, Views *vs,
          unsigned writable)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != 10) {
        PyErr_SetString(PyExc_TypeError, usage);
        return 0;
    }
    if (!win_geo(args, 2, g) || views_acquire(vs, &PyTuple_GET_ITEM(args, 0), 2, writable) < 2)
        return 0;
    const Py_buffer *va = &vs->b[0], *vb = &vs->b[1];
    const char *fa = va->format ? va->format : "B", *fb = vb->format ? vb->format : "B";
    if (va->ndim != 4 || vb->ndim != 6 || strcmp(fa, fb) != 0 ||
        va->itemsize != vb->itemsize || va->shape[3] != vb->shape[5]) {
        PyErr_Format(PyExc_ValueError, "%s: expected a 4-D array and 6-D patches of one dtype "
                     "and channel count (got %d-D %s and %d-D %s)", fn, va->ndim, fa,
                     vb->ndim, fb);
        views_release(vs);
        return 0;
    }
    if (!win_dims_ok(va, fn) || !win_dims_ok(vb, fn)) {
        views_release(vs);
        return 0;
    }
    if (vb->shape[0] > va->shape[0] - g->n0) {
        PyErr_Format(PyExc_ValueError, "%s: the patches ask for images past the input", fn);
        views_release(vs);
        return 0;
    }
    return 1;
}




/* For each patch row (b, r) and tap (i, j): the output columns q whose input column
 * iw = q * sw - pl + j * dw lies inside x, [qlo, qhi), are copied with fixed strides; the
 * others, and whole taps whose input row is outside x, are zeros. */
#define IM2COL_LOOP(U, ROW)                                                                 \
    do {                                                                                    \
        const size_t cw = (ROW), kk = (size_t)(KH * KW) * cw;                               \
        const U *x = (const U *)vx.buf;                                                     \
        U *pbase = (U *)vp.buf;                                                             \
        for (Py_ssize_t b = 0; b < B; b++) {                                                \
            const U *xb = x + (size_t)(g.n0 + b) * (size_t)H * (size_t)W * cw;              \
            for (Py_ssize_t r = 0; r < R; r++) {                                            \
                U *prow = pbase + ((size_t)(b * R + r) * (size_t)Q) * kk;                   \
                const Py_ssize_t ih0 = (g.r0 + r) * g.sh - g.pt;                            \
                for (Py_ssize_t i = 0; i < KH; i++) {                                       \
                    const Py_ssize_t ih = ih0 + i * g.dh;                                   \
                    for (Py_ssize_t j = 0; j < KW; j++) {                                   \
                        U *pt = prow + (size_t)(i * KW + j) * cw;                           \
                        const Py_ssize_t off = j * g.dw - g.pl;                             \
                        Py_ssize_t qlo = Q, qhi = Q;                                        \
                        if (ih >= 0 && ih < H) {                                            \
                            /* q * sw + off in [0, W) */                                    \
                            qlo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;                  \
                            qhi = W - 1 - off >= 0 ? (W - 1 - off) / g.sw + 1 : 0;          \
                            if (qhi > Q)                                                    \
                                qhi = Q;                                                    \
                            if (qlo > qhi)                                                  \
                                qlo = qhi;                                                  \
                        }                                                                   \
                        for (Py_ssize_t q = 0; q < qlo; q++)                                \
                            for (size_t c = 0; c < cw; c++)                                 \
                                pt[(size_t)q * kk + c] = 0;                                 \
                        if (qhi > qlo) {                                                    \
                            const U *src = xb + ((size_t)ih * (size_t)W) * cw;              \
                            const size_t xs = (size_t)g.sw * cw;                            \
                            const U *sq = src + (size_t)(qlo * g.sw + off) * cw;            \
                            U *dq = pt + (size_t)qlo * kk;                                  \
                            if (cw == 1)                                                    \
                                for (Py_ssize_t q = qlo; q < qhi; q++, sq += xs, dq += kk)  \
                                    dq[0] = sq[0];                                          \
                            else                                                            \
                                for (Py_ssize_t q = qlo; q < qhi; q++, sq += xs, dq += kk)  \
                                    for (size_t c = 0; c < cw; c++)                         \
                                        dq[c] = sq[c];                                      \
                        }                                                                   \
                        for (Py_ssize_t q = qhi; q < Q; q++)                                \
                            for (size_t c = 0; c < cw; c++)                                 \
                                pt[(size_t)q * kk + c] = 0;                                 \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    } while (0)

static PyObject *
mod_im2col(PyObject *Py_UNUSED(mod), PyObject *args)
{
    WinGeo g;
    Views vs;
    if (!win_begin("im2col", "im2col(x, p, n0, r0, sh, sw, dh, dw, pt, pl)", args, &g, &vs,
                   0x2))   /* (p is written) */
        return NULL;
    const Py_buffer vx = vs.b[0], vp = vs.b[1];
    const Py_ssize_t H = vx.shape[1], W = vx.shape[2];
    const Py_ssize_t B = vp.shape[0], R = vp.shape[1], Q = vp.shape[2];
    const Py_ssize_t KH = vp.shape[3], KW = vp.shape[4];
    const size_t row = (size_t)vx.shape[3] * (size_t)vx.itemsize;   /* bytes of C channels */
    Py_BEGIN_ALLOW_THREADS
    /* (the channel rows are short, often one element: typed copies, not memcpy calls) */
    const size_t align = (size_t)(uintptr_t)vx.buf | (size_t)(uintptr_t)vp.buf | row;
    if (align % 8 == 0)
        IM2COL_LOOP(uint64_t, row / 8);
    else if (align % 4 == 0)
        IM2COL_LOOP(uint32_t, row / 4);
    else
        IM2COL_LOOP(unsigned char, row);
    Py_END_ALLOW_THREADS
    views_release(&vs);
    Py_RETURN_NONE;
}

#define COL2IM_LOOP(T)                                                                      \
    do {                                                                                    \
        T *dx = (T *)vx.buf;                                                                \
        const T *dp = (const T *)vp.buf;                                                    \
        for (Py_ssize_t i = 0; i < KH; i++)                                                 \
            for (Py_ssize_t j = 0; j < KW; j++)                                             \
                for (Py_ssize_t b = 0; b < B; b++)                                          \
                    for (Py_ssize_t r = 0; r < R; r++) {                                    \
                        const Py_ssize_t ih = (g.r0 + r) * g.sh - g.pt + i * g.dh;          \
                        if (ih < 0 || ih >= H)                                              \
                            continue;                                                       \
                        for (Py_ssize_t q = 0; q < Q; q++) {                                \
                            const Py_ssize_t iw = q * g.sw - g.pl + j * g.dw;               \
                            if (iw < 0 || iw >= W)                                          \
                                continue;                                                   \
                            T *d = dx + (((g.n0 + b) * H + ih) * W + iw) * C;               \
                            const T *s = dp + ((((b * R + r) * Q + q) * KH + i) * KW + j) * C; \
                            for (Py_ssize_t c = 0; c < C; c++)                              \
                                d[c] += s[c];                                               \
                        }                                                                   \
                    }                                                                       \
    } while (0)

static PyObject *
mod_col2im_add(PyObject *Py_UNUSED(mod), PyObject *args)
{
    WinGeo g;
    Views vs;
    if (!win_begin("col2im_add", "col2im_add(dx, dp, n0, r0, sh, sw, dh, dw, pt, pl)", args,
                   &g, &vs, 0x1))   /* (dx is written) */
        return NULL;
    const Py_buffer vx = vs.b[0], vp = vs.b[1];
    const char kind = vx.format ? vx.format[0] : 'B';
    const Py_ssize_t H = vx.shape[1], W = vx.shape[2], C = vx.shape[3];
    const Py_ssize_t B = vp.shape[0], R = vp.shape[1], Q = vp.shape[2];
    const Py_ssize_t KH = vp.shape[3], KW = vp.shape[4];
    int ok = (kind == 'f' || kind == 'd') && vx.format[1] == '\0';
    if (!ok)
        PyErr_Format(PyExc_TypeError, "col2im_add: float32 or float64 arrays only, got %s",
                     vx.format ? vx.format : "B");
    else {
        const char *a = (const char *)vx.buf, *pb = (const char *)vp.buf;
        if (a < pb + vp.len && pb < a + vx.len) {
            PyErr_SetString(PyExc_ValueError, "col2im_add: dx overlaps the patches");
            ok = 0;
        }
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        if (kind == 'f')
            COL2IM_LOOP(float);
        else
            COL2IM_LOOP(double);
        Py_END_ALLOW_THREADS
    }
    views_release(&vs);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* ---- window ops on host arrays: max pooling --------------------------------------------------
 *
 * max_pool(x, out, kh, kw, sh, sw, pt, pl): out[n, oh, ow, :] is the maximum of the window's
 * taps inside x, taken tap by tap in row-major order from -inf as NumPy's maximum does (a
 * NaN wins). max_pool_grad(g, x, y, dx, ...) adds g * hit to dx tap by tap in row-major
 * order, hit marking the first tap of each window whose value equals the window's maximum
 * y: the operations, order included, of ops/nn.py's NumPy loop (dx starts at zero). */

typedef struct {
    Py_ssize_t kh, kw, sh, sw, pt, pl;
} PoolGeo;

static int
pool_geo(PyObject *args, Py_ssize_t first, PoolGeo *g)
{
    Py_ssize_t *const f[6] = {&g->kh, &g->kw, &g->sh, &g->sw, &g->pt, &g->pl};
    if (!parse_ssizes(args, first, 6, f))
        return 0;
    if (g->kh < 1 || g->kw < 1 || g->sh < 1 || g->sw < 1 || g->kh > WIN_STEP_MAX ||
        g->kw > WIN_STEP_MAX || g->sh > WIN_STEP_MAX || g->sw > WIN_STEP_MAX ||
        g->pt < -WIN_STEP_MAX || g->pt > WIN_STEP_MAX || g->pl < -WIN_STEP_MAX ||
        g->pl > WIN_STEP_MAX) {
        PyErr_SetString(PyExc_ValueError, "pool geometry out of range");
        return 0;
    }
    return 1;
}

/* The common entry of the pooling loops: ``usage`` when the argument count (count arrays,
 * then 6 integers) is off, the geometry into ``g``, buffers of the ``count`` 4-D arrays of one
 * float format (writeable from ``writable_from``) in vs. Returns the format char, or 0 with
 * an exception set and nothing held. */
static char
pool_begin(const char *fn, const char *usage, PyObject *args, PoolGeo *g, Views *vs, int count,
           int writable_from)
{
    vs->n = 0;
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != count + 6) {
        PyErr_SetString(PyExc_TypeError, usage);
        return 0;
    }
    if (!pool_geo(args, count, g) ||
        views_acquire(vs, &PyTuple_GET_ITEM(args, 0), count, ~0u << writable_from) < count)
        return 0;
    const Py_buffer *v = vs->b;
    const char *f0 = v[0].format ? v[0].format : "B";
    char kind = ((f0[0] == 'f' || f0[0] == 'd') && f0[1] == '\0') ? f0[0] : 0;
    for (int k = 0; k < count && kind; k++) {
        const char *f = v[k].format ? v[k].format : "B";
        if (v[k].ndim != 4 || f[0] != kind || f[1] != '\0')
            kind = 0;
    }
    if (kind == 0)
        PyErr_Format(PyExc_ValueError, "%s: expected 4-D float32 or float64 arrays of one "
                     "dtype", fn);
    for (int k = 0; k < count && kind; k++)
        if (!win_dims_ok(&v[k], fn))
            kind = 0;
    if (kind == 0)
        views_release(vs);
    return kind;
}

#define POOL_DIMS(in, o)                                                                     \
    const Py_ssize_t N = (in).shape[0], H = (in).shape[1], W = (in).shape[2];                \
    const Py_ssize_t C = (in).shape[3], OH = (o).shape[1], OW = (o).shape[2]

/* windows outer (each output element is folded over its taps in row-major order): one pass
 * over the arrays */
#define MAXPOOL_LOOP(T)                                                                     \
    do {                                                                                    \
        const T *x = (const T *)v[0].buf;                                                   \
        T *out = (T *)v[1].buf;                                                             \
        for (Py_ssize_t n = 0; n < N; n++)                                                  \
            for (Py_ssize_t oh = 0; oh < OH; oh++)                                          \
                for (Py_ssize_t ow = 0; ow < OW; ow++) {                                    \
                    T *dst = out + ((n * OH + oh) * OW + ow) * C;                           \
                    for (Py_ssize_t c = 0; c < C; c++)                                      \
                        dst[c] = (T)-INFINITY;                                              \
                    for (Py_ssize_t i = 0; i < g.kh; i++) {                                 \
                        const Py_ssize_t ih = oh * g.sh - g.pt + i;                         \
                        if (ih < 0 || ih >= H)                                              \
                            continue;                                                       \
                        for (Py_ssize_t j = 0; j < g.kw; j++) {                             \
                            const Py_ssize_t iw = ow * g.sw - g.pl + j;                     \
                            if (iw < 0 || iw >= W)                                          \
                                continue;                                                   \
                            const T *src = x + ((n * H + ih) * W + iw) * C;                 \
                            for (Py_ssize_t c = 0; c < C; c++) {                            \
                                const T a = dst[c], b = src[c];                             \
                                dst[c] = (a > b || a != a) ? a : b;                         \
                            }                                                               \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
    } while (0)

static PyObject *
mod_max_pool(PyObject *Py_UNUSED(mod), PyObject *args)
{
    PoolGeo g;
    Views vs;
    char kind = pool_begin("max_pool", "max_pool(x, out, kh, kw, sh, sw, pt, pl)", args, &g,
                           &vs, 2, 1);
    Py_buffer *v = vs.b;
    if (kind && (v[1].shape[0] != v[0].shape[0] || v[1].shape[3] != v[0].shape[3])) {
        PyErr_SetString(PyExc_ValueError, "max_pool: input and output differ in batch or "
                        "channels");
        kind = 0;
    }
    if (kind) {
        POOL_DIMS(v[0], v[1]);
        Py_BEGIN_ALLOW_THREADS
        if (kind == 'f')
            MAXPOOL_LOOP(float);
        else
            MAXPOOL_LOOP(double);
        Py_END_ALLOW_THREADS
    }
    views_release(&vs);   /* (nothing held when pool_views failed) */
    if (!kind)
        return NULL;
    Py_RETURN_NONE;
}

/* One window and tap: hit marks the window's first maximum so far, and g * hit is added. */
#define MAXPOOL_GRAD_TAP(T)                                                                 \
    do {                                                                                    \
        const Py_ssize_t iw = ow * g.sw - g.pl + j;                                         \
        if (iw < 0 || iw >= W)                                                              \
            break;                                                                          \
        const Py_ssize_t in = ((n * H + ih) * W + iw) * C;                                  \
        const Py_ssize_t o = ((n * OH + oh) * OW + ow) * C;                                 \
        for (Py_ssize_t c = 0; c < C; c++) {                                                \
            /* (branch-free: which tap holds a window's maximum is data, not a pattern) */  \
            const int hit = (x[in + c] == y[o + c]) & (taken[o + c] ^ 1);                   \
            taken[o + c] |= (unsigned char)hit;                                             \
            dx[in + c] += gr[o + c] * (T)hit;                                               \
        }                                                                                   \
    } while (0)

/* Taps in row-major order, each over every window: NumPy's order of the adds into dx. When
 * windows do not overlap, each input element takes at most one add (one window, one tap) and
 * the windows go outer instead (one pass over the arrays, same results). */
#define MAXPOOL_GRAD_LOOP(T)                                                                \
    do {                                                                                    \
        const T *gr = (const T *)v[0].buf, *x = (const T *)v[1].buf;                        \
        const T *y = (const T *)v[2].buf;                                                   \
        T *dx = (T *)v[3].buf;                                                              \
        if (g.sh >= g.kh && g.sw >= g.kw) {                                                 \
            for (Py_ssize_t n = 0; n < N; n++)                                              \
                for (Py_ssize_t oh = 0; oh < OH; oh++)                                      \
                    for (Py_ssize_t ow = 0; ow < OW; ow++)                                  \
                        for (Py_ssize_t i = 0; i < g.kh; i++) {                             \
                            const Py_ssize_t ih = oh * g.sh - g.pt + i;                     \
                            if (ih < 0 || ih >= H)                                          \
                                continue;                                                   \
                            for (Py_ssize_t j = 0; j < g.kw; j++)                           \
                                MAXPOOL_GRAD_TAP(T);                                        \
                        }                                                                   \
            break;                                                                          \
        }                                                                                   \
        for (Py_ssize_t i = 0; i < g.kh; i++)                                               \
            for (Py_ssize_t j = 0; j < g.kw; j++)                                           \
                for (Py_ssize_t n = 0; n < N; n++)                                          \
                    for (Py_ssize_t oh = 0; oh < OH; oh++) {                                \
                        const Py_ssize_t ih = oh * g.sh - g.pt + i;                         \
                        if (ih < 0 || ih >= H)                                              \
                            continue;                                                       \
                        for (Py_ssize_t ow = 0; ow < OW; ow++)                              \
                            MAXPOOL_GRAD_TAP(T);                                            \
                    }                                                                       \
    } while (0)

static PyObject *
mod_max_pool_grad(PyObject *Py_UNUSED(mod), PyObject *args)
{
    PoolGeo g;
    Views vs;
    char kind = pool_begin("max_pool_grad", "max_pool_grad(g, x, y, dx, kh, kw, sh, sw, pt, pl)",
                           args, &g, &vs, 4, 3);
    Py_buffer *v = vs.b;
    /* g and y: the output's shape; x and dx: the input's */
    if (kind) {
        int ok = 1;
        for (int d = 0; d < 4; d++)
            ok &= v[0].shape[d] == v[2].shape[d] && v[1].shape[d] == v[3].shape[d];
        ok &= v[0].shape[0] == v[1].shape[0] && v[0].shape[3] == v[1].shape[3];
        const char *a = (const char *)v[3].buf;
        for (int k = 0; k < 3 && ok; k++) {
            const char *b = (const char *)v[k].buf;
            ok &= !(a < b + v[k].len && b < a + v[3].len);
        }
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "max_pool_grad: shapes of g, x, y, dx do not "
                            "match, or dx overlaps an input");
            kind = 0;
        }
    }
    unsigned char *taken = NULL;
    if (kind) {
        taken = (unsigned char *)PyMem_RawCalloc((size_t)v[0].len / (size_t)v[0].itemsize + 1, 1);
        if (taken == NULL) {
            PyErr_NoMemory();
            kind = 0;
        }
    }
    if (kind) {
        POOL_DIMS(v[1], v[0]);
        Py_BEGIN_ALLOW_THREADS
        if (kind == 'f')
            MAXPOOL_GRAD_LOOP(float);
        else
            MAXPOOL_GRAD_LOOP(double);
        Py_END_ALLOW_THREADS
    }
    PyMem_RawFree(taken);
    views_release(&vs);   /* (nothing held when pool_views failed) */
    if (!kind)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
    {"setup", mod_setup, METH_VARARGS,
     "setup(Tensor, Variable, STATE, tls, ThreadState, Op, slow_path): bind the Python classes."},
    {"use_ndarray", mod_use_ndarray, METH_VARARGS,
     "use_ndarray(ndarray, samples): read NumPy dtypes from the array struct (checked)."},
    {"next_id", mod_next_id, METH_NOARGS, "The next tensor id (shared by every Tensor)."},
    {"wrap", (PyCFunction)(void (*)(void))mod_wrap, METH_FASTCALL,
     "wrap(value, device): a Tensor around a raw array, without __init__."},
    {"unary", mod_unary, METH_VARARGS,
     "unary(op, fallback, ufunc_name, float_only): the op's function with its fast path."},
    {"binary", mod_binary, METH_VARARGS,
     "binary(op, fallback, pyop, float_only, reflected): the op's function with its fast path."},
    {"record", (PyCFunction)(void (*)(void))mod_record, METH_FASTCALL,
     "record(tape, op, args, result, attrs, vals): tape.record for one tape (bool: handled)."},
    {"bind_tape", mod_bind_tape, METH_O,
     "bind_tape(GradientTape): read the tape's recording state from its slots."},
    {"set_rule", mod_set_rule, METH_VARARGS,
     "set_rule(name, function): run the gradient rule `name` in the sweep for `function`."},
    {"in_place_count", mod_in_place_count, METH_NOARGS,
     "How many cotangents the sweep's rules have updated in place (for tests)."},
    {"fast_dealloc", mod_fast_dealloc, METH_NOARGS,
     "Whether Tensor's own deallocator (with its free list) is installed."},
    {"sweep", mod_sweep, METH_VARARGS, "The backward sweep's common case (see tape._backward)."},
    {"adam", mod_adam, METH_VARARGS,
     "adam(p, g, m, v, out, c1, c2, eps, alpha, decay, lr): Adam._update in one pass."},
    {"im2col", mod_im2col, METH_VARARGS,
     "im2col(x, p, n0, r0, sh, sw, dh, dw, pt, pl): convolution patches of NHWC x into p."},
    {"col2im_add", mod_col2im_add, METH_VARARGS,
     "col2im_add(dx, dp, n0, r0, sh, sw, dh, dw, pt, pl): add patch gradients into dx."},
    {"max_pool", mod_max_pool, METH_VARARGS,
     "max_pool(x, out, kh, kw, sh, sw, pt, pl): max pooling of NHWC x into out."},
    {"max_pool_grad", mod_max_pool_grad, METH_VARARGS,
     "max_pool_grad(g, x, y, dx, kh, kw, sh, sw, pt, pl): max pooling's gradient, added to dx."},
    {"sgd", mod_sgd, METH_VARARGS,
     "sgd(p, g, mom, out, lr, momentum, nesterov): SGD._update with momentum in one pass."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_speedups", "gradtape's per-op hot paths in C.", -1, mod_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&OpFn_Type) < 0)
        return NULL;
#define INTERN(var, s) if ((var = PyUnicode_InternFromString(s)) == NULL) return NULL
    INTERN(S_dtype, "dtype");
    INTERN(S_kind, "kind");
    INTERN(S_complex_view, "complex_view");
    INTERN(S_xp, "xp");
    INTERN(S_needs_switch, "needs_switch");
    INTERN(S_state, "state");
    INTERN(S_tracked, "_tracked");
    INTERN(S_entries, "_entries");
    INTERN(S_shape, "shape");
    INTERN(S_watch_accessed, "_watch_accessed");
    INTERN(S_trainable, "trainable");
    INTERN(S_watch_variable, "_watch_variable");
#undef INTERN
    INT_ZERO = PyLong_FromLong(0);
    INT_ONE = PyLong_FromLong(1);
    if (INT_ZERO == NULL || INT_ONE == NULL)
        return NULL;
    NEEDS[3] = PyTuple_Pack(1, Py_True);
    NEEDS[4] = PyTuple_Pack(2, Py_False, Py_False);
    NEEDS[5] = PyTuple_Pack(2, Py_False, Py_True);
    NEEDS[6] = PyTuple_Pack(2, Py_True, Py_False);
    NEEDS[7] = PyTuple_Pack(2, Py_True, Py_True);
    for (int i = 3; i < 8; i++)
        if (NEEDS[i] == NULL)
            return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&OpFn_Type);
    if (PyModule_AddObject(m, "OpFunction", (PyObject *)&OpFn_Type) < 0) {
        Py_DECREF(&OpFn_Type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
