"""``gt.math.special``: TensorFlow's ``tf.math.special`` functions, with TF's values and
gradients, and ``gt.math.sobol_sample``.

* The Bessel functions ``J0, J1, Y0, Y1, K0, K1`` (and the scaled ``K0e, K1e``) run SciPy's
  on the CPU (and on the strict test device) and ``cupyx.scipy.special``'s on a GPU, as
  ``gt.math.bessel_i0`` and friends do; where TF's kernels give a value SciPy does not (its
  Y at ``x <= 0`` is -inf, its K there +inf, SciPy's NaN), TF's is returned.
* ``dawsn``, ``expint``, ``fresnel_cos``, ``fresnel_sin`` and ``spence`` are TensorFlow's own
  rational approximations (ports of Cephes in ``special_math_op_misc_impl.h``, the same
  coefficients and branches) written with the device's array namespace, so they need no
  SciPy and run on every device: ``expint`` is NaN for ``x < 0`` and ``spence`` for
  ``x < 0``, as TF's (SciPy's ``expi`` extends to negative ``x``).

Each is a primitive with TensorFlow's gradient rule (``math_grad.py``), differentiable again.
"""
from __future__ import annotations

import math as _pymath

import numpy as np

from .ops.extra import _doc, _special, bessel_i0, bessel_i0e, bessel_i1, bessel_i1e
from .ops.math import _unary

__all__ = ["bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "bessel_j0", "bessel_j1",
           "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e", "bessel_y0", "bessel_y1",
           "dawsn", "expint", "fresnel_cos", "fresnel_sin", "spence"]


def _fill_nonpositive(xp, x, out, value):
    """``out`` with ``value`` where ``x <= 0`` (TF's Y and K functions there)."""
    return xp.where(x <= 0, xp.full((), value, dtype=out.dtype), out)


def _bessel(scipy_name, fill=None):
    if fill is None:
        return lambda xp, x: _special(scipy_name, xp, x)
    return lambda xp, x: _fill_nonpositive(xp, x, _special(scipy_name, xp, x), fill)


def _safe(ops, x):
    """``(x == 0, x with 1 at 0)``: a divisor that keeps every order of the rule finite."""
    zero = x == 0
    return zero, ops.where(zero, 1, x)


def _j1_vjp(ops, needs, g, ans, x):
    zero, safe = _safe(ops, x)
    return (g * ops.where(zero, 0.5, ops.bessel_j0(x) - ans / safe),)


_j0, bessel_j0 = _unary("bessel_j0", _bessel("j0"),
                        lambda ops, needs, g, ans, x: (g * -ops.bessel_j1(x),),
                        save_inputs=True, save_output=False)
_doc(bessel_j0, "The Bessel function of the first kind of order 0 (``tf.math.special."
                "bessel_j0``); gradient ``-J1(x)``.")
_j1, bessel_j1 = _unary("bessel_j1", _bessel("j1"), _j1_vjp, save_inputs=True,
                        save_output=True)
_doc(bessel_j1, "The Bessel function of the first kind of order 1 (``tf.math.special."
                "bessel_j1``); gradient ``J0(x) - J1(x) / x`` (1/2 at 0).")
_y0, bessel_y0 = _unary("bessel_y0", _bessel("y0", -np.inf),
                        lambda ops, needs, g, ans, x: (g * -ops.bessel_y1(x),),
                        save_inputs=True, save_output=False)
_doc(bessel_y0, "The Bessel function of the second kind of order 0 (``tf.math.special."
                "bessel_y0``; -inf for ``x <= 0``); gradient ``-Y1(x)``.")
_y1, bessel_y1 = _unary("bessel_y1", _bessel("y1", -np.inf),
                        lambda ops, needs, g, ans, x: (g * (ops.bessel_y0(x) - ans / x),),
                        save_inputs=True, save_output=True)
_doc(bessel_y1, "The Bessel function of the second kind of order 1 (``tf.math.special."
                "bessel_y1``; -inf for ``x <= 0``); gradient ``Y0(x) - Y1(x) / x``.")
_k0, bessel_k0 = _unary("bessel_k0", _bessel("k0", np.inf),
                        lambda ops, needs, g, ans, x: (g * -ops.bessel_k1(x),),
                        save_inputs=True, save_output=False)
_doc(bessel_k0, "The modified Bessel function of the second kind of order 0 (``tf.math."
                "special.bessel_k0``; +inf for ``x <= 0``); gradient ``-K1(x)``.")
_k0e, bessel_k0e = _unary("bessel_k0e", _bessel("k0e", np.inf),
                          lambda ops, needs, g, ans, x: (g * (ans - ops.bessel_k1e(x)),),
                          save_inputs=True, save_output=True)
_doc(bessel_k0e, "``exp(x) K0(x)`` (``tf.math.special.bessel_k0e``; +inf for ``x <= 0``); "
                 "gradient ``K0e(x) - K1e(x)``.")
_k1, bessel_k1 = _unary("bessel_k1", _bessel("k1", np.inf),
                        lambda ops, needs, g, ans, x: (g * (-ops.bessel_k0(x) - ans / x),),
                        save_inputs=True, save_output=True)
_doc(bessel_k1, "The modified Bessel function of the second kind of order 1 (``tf.math."
                "special.bessel_k1``; +inf for ``x <= 0``); gradient ``-K0(x) - K1(x) / x``.")
_k1e, bessel_k1e = _unary(
    "bessel_k1e", _bessel("k1e", np.inf),
    lambda ops, needs, g, ans, x: (g * (ans * (1 - 1 / x) - ops.bessel_k0e(x)),),
    save_inputs=True, save_output=True)
_doc(bessel_k1e, "``exp(x) K1(x)`` (``tf.math.special.bessel_k1e``; +inf for ``x <= 0``); "
                 "gradient ``K1e(x) (1 - 1/x) - K0e(x)``.")


# --- TensorFlow's rational approximations, on the device's namespace -----------------------

def _poly(x, coeffs):
    """``coeffs[0] x^n + ... + coeffs[n]`` (Horner, as Eigen's ``ppolevl``)."""
    out = x * 0 + coeffs[0]
    for c in coeffs[1:]:
        out = out * x + c
    return out


def _widened(fn):
    """Run ``fn`` in float32 for float16 inputs (Eigen's half ops compute in float)."""
    def forward(xp, x):
        if x.dtype == np.float16:
            return fn(xp, x.astype(np.float32)).astype(np.float16)
        return fn(xp, x)
    return forward


_DAWSN_AN = (1.13681498971755972054E-11, 8.49262267667473811108E-10, 1.94434204175553054283E-8,
             9.53151741254484363489E-7, 3.07828309874913200438E-6, 3.52513368520288738649E-4,
             -8.50149846724410912031E-4, 4.22618223005546594270E-2,
             -9.17480371773452345351E-2, 9.99999999999999994612E-1)
_DAWSN_AD = (2.40372073066762605484E-11, 1.48864681368493396752E-9, 5.21265281010541664570E-8,
             1.27258478273186970203E-6, 2.32490249820789513991E-5, 3.25524741826057911661E-4,
             3.48805814657162590916E-3, 2.79448531198828973716E-2, 1.58874241960120565368E-1,
             5.74918629489320327824E-1, 1.00000000000000000539E0)
_DAWSN_BN = (5.08955156417900903354E-1, -2.44754418142697847934E-1, 9.41512335303534411857E-2,
             -2.18711255142039025206E-2, 3.66207612329569181322E-3,
             -4.23209114460388756528E-4, 3.59641304793896631888E-5,
             -2.14640351719968974225E-6, 9.10010780076391431042E-8,
             -2.40274520828250956942E-9, 3.59233385440928410398E-11)
_DAWSN_BD = (1.0, -6.31839869873368190192E-1, 2.36706788228248691528E-1,
             -5.31806367003223277662E-2, 8.48041718586295374409E-3,
             -9.47996768486665330168E-4, 7.81025592944552338085E-5,
             -4.55875153252442634831E-6, 1.89100358111421846170E-7,
             -4.91324691331920606875E-9, 7.18466403235734541950E-11)
_DAWSN_CN = (-5.90592860534773254987E-1, 6.29235242724368800674E-1,
             -1.72858975380388136411E-1, 1.64837047825189632310E-2,
             -4.86827613020462700845E-4)
_DAWSN_CD = (1.0, -2.69820057197544900361E0, 1.73270799045947845857E0,
             -3.93708582281939493482E-1, 3.44278924041233391079E-2,
             -9.73655226040941223894E-4)


def _dawsn_fwd(xp, x):
    ax = xp.abs(x)
    x2 = ax * ax
    near = ax * _poly(x2, _DAWSN_AN) / _poly(x2, _DAWSN_AD)
    inv = 1.0 / ax
    inv2 = inv * inv
    mid = 0.5 * (inv2 * (_poly(inv2, _DAWSN_BN) / (ax * _poly(inv2, _DAWSN_BD))) + inv)
    far = 0.5 * (inv2 * (_poly(inv2, _DAWSN_CN) / (ax * _poly(inv2, _DAWSN_CD))) + inv)
    out = xp.where(ax < 3.25, near, xp.where(ax < 6.25, mid, xp.where(ax < 1.0e9, far,
                                                                        0.5 / x)))
    return xp.where(x < 0, -out, out)


_dawsn, dawsn = _unary("dawsn", _widened(_dawsn_fwd),
                       lambda ops, needs, g, ans, x: (g * (1.0 - 2 * x * ans),),
                       save_inputs=True, save_output=True, quiet=True)
_doc(dawsn, "Dawson's integral ``exp(-x^2) * integral_0^x exp(t^2) dt`` (``tf.math.special."
            "dawsn``); gradient ``1 - 2 x dawsn(x)``.")

_EI_A = (-5.350447357812542947283E0, 2.185049168816613393830E2, -4.176572384826693777058E3,
         5.541176756393557601232E4, -3.313381331178144034309E5, 1.592627163384945414220E6)
_EI_B = (1.0, -5.250547959112862969197E1, 1.259616186786790571525E3,
         -1.756549581973534652631E4, 1.493062117002725991967E5, -7.294949239640527645655E5,
         1.592627163384945429726E6)
# (upper bound of the interval, numerator, denominator) of x exp(-x) Ei(x) - 1 = w R(w)
_EI_TAILS = (
    (4.0, (1.981808503259689673238E-2, -1.271645625984917501326E0, -2.088160335681228318920E0,
           2.755544509187936721172E0, -4.409507048701600257171E-1, 4.665623805935891391017E-2,
           -1.545042679673485262580E-3, 7.059980605299617478514E-5),
     (1.0, 1.476498670914921440652E0, 5.629177174822436244827E-1, 1.699017897879307263248E-1,
      2.291647179034212017463E-2, 4.450150439728752875043E-3, 1.727439612206521482874E-4,
      3.953167195549672482304E-5)),
    (8.0, (-1.373215375871208729803E0, -7.084559133740838761406E-1, 1.580806855547941010501E0,
           -2.601500427425622944234E-1, 2.994674694113713763365E-2,
           -1.038086040188744005513E-3, 4.371064420753005429514E-5, 2.141783679522602903795E-6),
     (1.0, 8.585231423622028380768E-1, 4.483285822873995129957E-1, 7.687932158124475434091E-2,
      2.449868241021887685904E-2, 8.832165941927796567926E-4, 4.590952299511353531215E-4,
      -4.729848351866523044863E-6, 2.665195537390710170105E-6)),
    (16.0, (-2.106934601691916512584E0, 1.732733869664688041885E0, -2.423619178935841904839E-1,
            2.322724180937565842585E-2, 2.372880440493179832059E-4, -8.343219561192552752335E-5,
            1.363408795605250394881E-5, -3.655412321999253963714E-7,
            1.464941733975961318456E-8, 6.176407863710360207074E-10),
     (1.0, -2.298062239901678075778E-1, 1.105077041474037862347E-1,
      -1.566542966630792353556E-2, 2.761106850817352773874E-3, -2.089148012284048449115E-4,
      1.708528938807675304186E-5, -4.459311796356686423199E-7, 1.394634930353847498145E-8,
      6.150865933977338354138E-10)),
    (32.0, (-2.458119367674020323359E-1, -1.483382253322077687183E-1, 7.248291795735551591813E-2,
            -1.348315687380940523823E-2, 1.342775069788636972294E-3,
            -7.942465637159712264564E-5, 2.644179518984235952241E-6,
            -4.239473659313765177195E-8),
     (1.0, -1.044225908443871106315E-1, -2.676453128101402655055E-1,
      9.695000254621984627876E-2, -1.601745692712991078208E-2, 1.496414899205908021882E-3,
      -8.462452563778485013756E-5, 2.728938403476726394024E-6, -4.239462431819542051337E-8)),
    (64.0, (1.212561118105456670844E-1, -5.823133179043894485122E-1, 2.348887314557016779211E-1,
            -3.040034318113248237280E-2, 1.510082146865190661777E-3,
            -2.523137095499571377122E-5),
     (1.0, -1.002252150365854016662E0, 2.928709694872224144953E-1,
      -3.337004338674007801307E-2, 1.560544881127388842819E-3, -2.523137093603234562648E-5)),
    (np.inf, (-7.657847078286127362028E-1, 6.886192415566705051750E-1,
              -2.132598113545206124553E-1, 3.346107552384193813594E-2,
              -3.076541477344756050249E-3, 1.747119316454907477380E-4,
              -6.103711682274170530369E-6, 1.218032765428652199087E-7,
              -1.086076102793290233007E-9),
     (1.0, -1.888802868662308731041E0, 1.066691687211408896850E0, -2.751915982306380647738E-1,
      3.930852688233823569726E-2, -3.414684558602365085394E-3, 1.866844370703555398195E-4,
      -6.345146083130515357861E-6, 1.239754287483206878024E-7,
      -1.086076102793126632978E-9)),
)
_EULER = 0.5772156649015329


def _expint_fwd(xp, x):
    out = x * (_poly(x, _EI_A) / _poly(x, _EI_B)) + _EULER + xp.log(x)
    w = 1.0 / x
    ex = xp.exp(x)
    low = 2.0
    for high, num, den in _EI_TAILS:
        f = w * (_poly(w, num) / _poly(w, den)) + 1.0
        out = xp.where(x >= low, ex * w * f, out) if high == np.inf else \
            xp.where((x >= low) & (x < high), ex * w * f, out)
        low = high
    return xp.where(x < 0, xp.full((), np.nan, dtype=x.dtype), out)


_expint, expint = _unary("expint", _widened(_expint_fwd),
                         lambda ops, needs, g, ans, x: (g * ops.exp(x) / x,),
                         save_inputs=True, save_output=False, quiet=True)
_doc(expint, "The exponential integral ``Ei(x)`` (``tf.math.special.expint``; NaN for "
             "``x < 0``); gradient ``exp(x) / x``.")

_FRESNEL_CN = (-4.98843114573573548651E-8, 9.50428062829859605134E-6,
               -6.45191435683965050962E-4, 1.88843319396703850064E-2,
               -2.05525900955013891793E-1, 9.99999999999999998822E-1)
_FRESNEL_CD = (3.99982968972495980367E-12, 9.15439215774657478799E-10,
               1.25001862479598821474E-7, 1.22262789024179030997E-5,
               8.68029542941784300606E-4, 4.12142090722199792936E-2, 1.00000000000000000118E0)
_FRESNEL_SN = (-2.99181919401019853726E3, 7.08840045257738576863E5, -6.29741486205862506537E7,
               2.54890880573376359104E9, -4.42979518059697779103E10, 3.18016297876567817986E11)
_FRESNEL_SD = (1.0, 2.81376268889994315696E2, 4.55847810806532581675E4,
               5.17343888770096400730E6, 4.19320245898111231129E8, 2.24411795645340920940E10,
               6.07366389490084639049E11)
_FRESNEL_FN = (4.21543555043677546506E-1, 1.43407919780758885261E-1, 1.15220955073585758835E-2,
               3.45017939782574027900E-4, 4.63613749287867322088E-6, 3.05568983790257605827E-8,
               1.02304514164907233465E-10, 1.72010743268161828879E-13,
               1.34283276233062758925E-16, 3.76329711269987889006E-20)
_FRESNEL_FD = (1.0, 7.51586398353378947175E-1, 1.16888925859191382142E-1,
               6.44051526508858611005E-3, 1.55934409164153020873E-4, 1.84627567348930545870E-6,
               1.12699224763999035261E-8, 3.60140029589371370404E-11, 5.88754533621578410010E-14,
               4.52001434074129701496E-17, 1.25443237090011264384E-20)
_FRESNEL_GN = (5.04442073643383265887E-1, 1.97102833525523411709E-1, 1.87648584092575249293E-2,
               6.84079380915393090172E-4, 1.15138826111884280931E-5, 9.82852443688422223854E-8,
               4.45344415861750144738E-10, 1.08268041139020870318E-12,
               1.37555460633261799868E-15, 8.36354435630677421531E-19,
               1.86958710162783235106E-22)
_FRESNEL_GD = (1.0, 1.47495759925128324529E0, 3.37748989120019970451E-1,
               2.53603741420338795122E-2, 8.14679107184306179049E-4, 1.27545075667729118702E-5,
               1.04314589657571990585E-7, 4.60680728146520428211E-10,
               1.10273215066240270757E-12, 1.38796531259578871258E-15,
               8.39158816283118707363E-19, 1.86958710162783236342E-22)


def _fresnel(use_sin):
    def forward(xp, x):
        ax = xp.abs(x)
        x2 = ax * ax
        x4 = x2 * x2
        if use_sin:
            near = ax * x2 * _poly(x4, _FRESNEL_SN) / _poly(x4, _FRESNEL_SD)
        else:
            near = ax * _poly(x4, _FRESNEL_CN) / _poly(x4, _FRESNEL_CD)
        t = 1.0 / (_pymath.pi * x2)
        u = t * t
        f = 1.0 - u * (_poly(u, _FRESNEL_FN) / _poly(u, _FRESNEL_FD))
        g = t * _poly(u, _FRESNEL_GN) / _poly(u, _FRESNEL_GD)
        z = (_pymath.pi / 2) * x2
        c, s = xp.cos(z), xp.sin(z)
        y = 1.0 / (_pymath.pi * ax)
        far = 0.5 - (f * c + g * s) * y if use_sin else 0.5 + (f * s - g * c) * y
        out = xp.where(ax > 36974.0, 0.5, xp.where(x2 < 2.5625, near, far))
        return xp.where(x < 0, -out, out)
    return forward


_fresnel_cos, fresnel_cos = _unary(
    "fresnel_cos", _widened(_fresnel(False)),
    lambda ops, needs, g, ans, x: (g * ops.cos((_pymath.pi / 2) * ops.square(x)),),
    save_inputs=True, save_output=False, quiet=True)
_doc(fresnel_cos, "Fresnel's cosine integral ``integral_0^x cos(pi t^2 / 2) dt`` (``tf.math."
                  "special.fresnel_cos``); gradient ``cos(pi x^2 / 2)``.")
_fresnel_sin, fresnel_sin = _unary(
    "fresnel_sin", _widened(_fresnel(True)),
    lambda ops, needs, g, ans, x: (g * ops.sin((_pymath.pi / 2) * ops.square(x)),),
    save_inputs=True, save_output=False, quiet=True)
_doc(fresnel_sin, "Fresnel's sine integral ``integral_0^x sin(pi t^2 / 2) dt`` (``tf.math."
                  "special.fresnel_sin``); gradient ``sin(pi x^2 / 2)``.")

_SPENCE_A = (4.65128586073990045278E-5, 7.31589045238094711071E-3, 1.33847639578309018650E-1,
             8.79691311754530315341E-1, 2.71149851196553469920E0, 4.25697156008121755724E0,
             3.29771340985225106936E0, 1.00000000000000000126E0)
_SPENCE_B = (6.90990488912553276999E-4, 2.54043763932544379113E-2, 2.82974860602568089943E-1,
             1.41172597751831069617E0, 3.63800533345137075418E0, 5.03278880143316990390E0,
             3.54771340985225096217E0, 9.99999999999999998740E-1)
_PI2O6 = _pymath.pi * _pymath.pi / 6.0


def _spence_fwd(xp, x):
    y = xp.where(x < 2.0, x, 1.0 / x)
    w = xp.where(y > 1.5, 1.0 / y - 1.0, xp.where(y < 0.5, -y, y - 1.0))
    out = -w * (_poly(w, _SPENCE_A) / _poly(w, _SPENCE_B))
    z = xp.log(y)
    out = xp.where(y < 0.5, -z * xp.log1p(-y) + _PI2O6 - out, out)
    out = xp.where(x > 1.5, -0.5 * z * z - out, out)
    out = xp.where(x == 1.0, 0.0, xp.where(x == 0.0, _PI2O6, out))
    return xp.where(x < 0, xp.full((), np.nan, dtype=x.dtype), out).astype(x.dtype, copy=False)


def _spence_vjp(ops, needs, g, ans, x):
    one = x == 1
    safe = ops.where(one, 2, x)
    return (g * ops.where(one, -1.0, ops.log(safe) / (1 - safe)),)


_spence, spence = _unary("spence", _widened(_spence_fwd), _spence_vjp, save_inputs=True,
                         save_output=False, quiet=True)
_doc(spence, "Spence's integral ``integral_1^x log(t) / (1 - t) dt`` (``tf.math.special."
             "spence``; NaN for ``x < 0``); gradient ``log(x) / (1 - x)``, -1 at 1.")


# --- Sobol sequences ---------------------------------------------------------------------------

_SOBOL_MAX_DIM = 21200


def _int32_scalar(value, what, opname):
    """A Python int from an int, a NumPy integer or an integer scalar tensor (read on the
    host, as TF's kernel reads it)."""
    from .tensor import Tensor
    if isinstance(value, Tensor):
        if value._value.dtype.kind not in "iu" or value._value.ndim != 0:
            raise TypeError(f"{opname}: {what} must be an int32 scalar, got a "
                            f"{value.dtype.name} tensor of shape {tuple(value.shape)}")
        return int(value.numpy())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{opname}: {what} must be an int32 scalar, got {value!r}")
    return int(value)


def sobol_sample(dim, num_results, skip=0, dtype=np.float32, name=None):
    """``num_results`` points of the ``dim``-dimensional Sobol sequence after the first
    ``skip`` (``tf.math.sobol_sample``: Joe and Kuo's direction numbers, the sequence's
    leading zero point left out), ``[num_results, dim]`` float32 or float64 on the current
    device. The points are exact binary fractions, SciPy's unscrambled ``qmc.Sobol`` (the
    same direction numbers); SciPy is needed (``pip install scipy`` or
    ``gradtape[special]``)."""
    import warnings

    from .dtypes import as_dtype
    from .registry import InvalidArgumentError
    from .tensor import convert_to_tensor
    opname = "sobol_sample"
    d = _int32_scalar(dim, "dim", opname)
    n = _int32_scalar(num_results, "num_results", opname)
    s = _int32_scalar(skip, "skip", opname)
    dt = as_dtype(dtype)
    if dt.name not in ("float32", "float64"):
        raise InvalidArgumentError(f"{opname}: dtype must be float32 or float64, got "
                                   f"{dt.name}")
    if d < 1:
        raise InvalidArgumentError(f"{opname}: dim must be at least one, got {d}")
    if d > _SOBOL_MAX_DIM:
        raise InvalidArgumentError(f"{opname}: dim must be at most {_SOBOL_MAX_DIM}, got {d}")
    if n < 1:
        raise InvalidArgumentError(f"{opname}: num_results must be at least one, got {n}")
    if s < 0:
        raise InvalidArgumentError(f"{opname}: skip must be non-negative, got {s}")
    if max(d, n, s) >= 2 ** 31:
        raise InvalidArgumentError(f"{opname}: dim, num_results and skip must fit in int32, "
                                   f"got {d}, {n}, {s}")
    try:
        from scipy.stats import qmc
    except ImportError:
        raise ImportError(f"{opname}: gradtape takes the Sobol direction numbers from SciPy; "
                          "install it: pip install scipy (or gradtape[special])") from None
    engine = qmc.Sobol(d, scramble=False, bits=32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # SciPy's note on counts not powers of 2
        engine.fast_forward(s + 1)
        points = engine.random(n)
    return convert_to_tensor(np.ascontiguousarray(points.astype(dt.as_numpy_dtype)))
