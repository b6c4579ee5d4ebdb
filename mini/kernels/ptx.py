"""What a CUDA kernel compiles to: its PTX for a real NVIDIA GPU, and what that PTX says.

PTX is the assembly language of NVIDIA GPUs.  Numba compiles a ``@cuda.jit`` kernel to PTX with
NVIDIA's NVVM compiler (the pip packages ``nvidia-cuda-nvcc-cu12`` and ``nvidia-cuda-nvrtc-cu12``)
and needs no GPU for it, so even on the CUDA simulator you can see what a kernel runs as on an
A100 (``sm_80``).  A few instructions tell most of the story of L05 slide 2:

* ``ld.global`` / ``st.global``: a load from / a store to global memory, the GPU's DRAM;
* ``ld.shared`` / ``st.shared``: the same in shared memory; the ``.shared`` declarations are the
  kernel's shared arrays (``cuda.shared.array``), with their size in bytes;
* ``bar.sync``: a barrier, ``cuda.syncthreads()``;
* ``fma.rn.f32``: a float32 multiply-add, ``acc += a * b``; an instruction on ``.f64`` works on
  float64 (or converts to it), which consumer GPUs run at 1/32 to 1/64 of their float32 rate
  and data-centre GPUs (A100, H100) at 1/2;
* ``%nctaid.x``: the grid's size in blocks, which ``cuda.gridsize`` reads (a grid-stride loop).

The compiler unrolls a loop whose length it knows (``for kk in range(TILE)``), so one pass of the
source's loop may appear several times in a row: :meth:`Summary.per_step` counts per step of the
loop that does the multiply-adds, however it was unrolled.

Numba's CUDA simulator has no compiler, so :func:`summary` compiles in a new Python process with
the simulator off: the kernel travels there as plain data (:func:`describe`: its code object and
the values it reads), is rebuilt there (:func:`rebuild`) and compiled (:func:`compile_description`).

    summary = ptx.summary(matmul_tiled, A, B, C)    # the kernel, and arguments to compile it for
    summary.per_step(TILE)                          # {"global loads": 2.0, "barriers": 2.0}
"""
import base64
import builtins
import dataclasses
import dis
import importlib
import json
import marshal
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

CC = (8, 0)                  # compute capability 8.0: NVIDIA A100
MODULES = ("math", "cmath", "operator", "numpy", "numba", "numba.cuda")
NUMBERS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64")
MAX_DEPTH = 4                # device functions calling device functions, ...
MAX_CODE_CHARS = 1 << 20     # a kernel's marshalled code object, in base64


class CompileError(RuntimeError):
    """The kernel does not compile for the GPU; the message is the compiler's, shortened."""


# ---------------------------------------------------------------------------------------------
# A kernel as plain data, and back
# ---------------------------------------------------------------------------------------------

def describe(kernel, named=None):
    """A kernel (or device function) as plain data: its code object, marshalled, and the values
    it reads (the globals its code names, its closure): numbers as values, ``math``, ``numpy``
    and ``numba.cuda`` by name, device functions described in turn, the functions of ``named``
    (``{label: function}``) by their label, and anything else by its type's name (a kernel cannot
    use it, and the compiler will say so)."""
    function = getattr(kernel, "py_func", kernel)
    if not isinstance(function, types.FunctionType):
        raise TypeError(f"expected a @cuda.jit kernel, got {type(kernel).__name__} {kernel!r:.60}")
    return _function(function, named or {}, 0)


def _function(function, named, depth):
    code, values = function.__code__, function.__globals__
    return {"name": function.__name__,
            "code": base64.b64encode(marshal.dumps(_unfiled(code))).decode(),
            "globals": {name: _reference(name, values[name], named, depth)
                        for name in sorted(globals_read(code)) if name in values},
            "closure": [_reference(name, _contents(cell), named, depth)
                        for name, cell in zip(code.co_freevars, function.__closure__ or ())]}


def _unfiled(code):
    """``code`` without the name of the file it came from (a notebook's kernel names each cell
    by a temporary file of its own process): a kernel is described alike wherever it runs."""
    consts = tuple(_unfiled(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename="<kernel>", co_consts=consts)


def globals_read(code):
    """The global names a code object (and the code objects inside it) reads."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for inner in code.co_consts:
        if isinstance(inner, types.CodeType):
            names |= globals_read(inner)
    return names


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:                  # a cell not filled yet
        return None


def _reference(name, value, named, depth):
    for label, function in named.items():
        if value is function or getattr(value, "py_func", None) is function:
            return {"named": label, "device": _is_device(value)}
    if isinstance(value, (bool, int, float)):
        return {"number": value}
    if isinstance(value, np.generic) and value.dtype.name in NUMBERS:
        return {"number": value.item(), "dtype": value.dtype.name}
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__} if value.__name__ in MODULES else {
            "object": f"module {value.__name__}"}
    holder = next((module for module in MODULES if value is not None
                   and getattr(sys.modules.get(module), name, None) is value), None)
    if holder is not None:
        return {"module": holder, "attribute": name}
    if isinstance(value, type) and getattr(np, value.__name__, None) is value \
            and value.__name__ in NUMBERS:
        return {"numpy type": value.__name__}
    if _numba_type(value):
        return {"numba type": str(value)}
    function = getattr(value, "py_func", value)
    if isinstance(function, types.FunctionType) and depth < MAX_DEPTH:
        return {"function": _function(function, named, depth + 1), "device": _is_device(value)}
    return {"object": type(value).__name__}


def _is_device(value):
    """Whether ``value`` is a ``@cuda.jit(device=True)`` function (on the simulator, or not)."""
    if isinstance(getattr(value, "_device", None), bool):
        return value._device
    return bool(getattr(value, "targetoptions", {}).get("device", False))


def _numba_type(value):
    numba = sys.modules.get("numba")
    return (numba is not None and isinstance(value, numba.core.types.Type)
            and str(value) in NUMBERS and getattr(numba.types, str(value)) == value)


def rebuild(description, named=None, depth=0):
    """The function :func:`describe` described, ready to compile: its code object (named after
    the function, so that no file is read for the compiler's messages) with the values it reads
    put back, and the functions of ``named`` (``{label: function}``) in place of their labels.

    ``description`` may come from anyone: what is not a description raises ValueError."""
    try:
        return _rebuilt(description, named or {}, depth)
    except NotADescription:
        raise
    except (KeyError, TypeError, AttributeError, EOFError, OverflowError, ValueError) as error:
        raise NotADescription(f"not a kernel's description ({type(error).__name__})") from None


def _rebuilt(description, named, depth):
    _require(isinstance(description, dict) and set(description) == {"name", "code", "globals",
                                                                    "closure"}, "its fields")
    name, code = description["name"], description["code"]
    _require(isinstance(name, str) and len(name) <= 100 and isinstance(code, str)
             and len(code) <= MAX_CODE_CHARS and depth <= MAX_DEPTH, "its name or code")
    code = marshal.loads(base64.b64decode(code, validate=True))
    _require(isinstance(code, types.CodeType), "its code")
    values, closure = description["globals"], description["closure"]
    _require(isinstance(values, dict) and isinstance(closure, list)
             and len(closure) == len(code.co_freevars), "what it reads")
    _require(all(isinstance(key, str) for key in values), "the names it reads")
    scope = {"__builtins__": builtins, **{key: _value(reference, named, depth)
                                          for key, reference in values.items()}}
    cells = tuple(types.CellType(_value(reference, named, depth)) for reference in closure)
    return types.FunctionType(_anonymous(code, f"<{name.strip('<>')}>"), scope, name, None,
                              cells or None)


class NotADescription(ValueError):
    """What :func:`rebuild` was given is not what :func:`describe` makes."""


def _require(condition, what):
    if not condition:
        raise NotADescription(f"not a kernel's description ({what})")


def _anonymous(code, filename):
    consts = tuple(_anonymous(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _value(reference, named, depth):
    """The value a reference of :func:`_reference` stands for."""
    _require(isinstance(reference, dict), "a value it reads")
    kind = next(iter(reference), None)
    if kind == "number":
        number, dtype = reference["number"], reference.get("dtype")
        _require(isinstance(number, (bool, int, float)) and dtype in (None, *NUMBERS), "a number")
        return number if dtype is None else np.dtype(dtype).type(number)
    if kind == "module":
        _require(reference["module"] in MODULES, "a module")
        module = importlib.import_module(reference["module"])
        if "attribute" not in reference:
            return module
        attribute = reference["attribute"]
        _require(isinstance(attribute, str) and attribute.isidentifier()
                 and not attribute.startswith("_"), "a module's function")
        return getattr(module, attribute)
    if kind in ("named", "function"):
        label = reference[kind] if kind == "named" else None
        _require(kind == "function" or isinstance(label, str) and label in named, "a function")
        function = named[label] if label else _rebuilt(reference["function"], named, depth + 1)
        from numba import cuda
        return cuda.jit(device=True)(function) if reference.get("device") else function
    if kind == "numpy type":
        _require(reference[kind] in NUMBERS, "a numpy type")
        return getattr(np, reference[kind])
    if kind == "numba type":
        _require(reference[kind] in NUMBERS, "a numba type")
        import numba
        return getattr(numba.types, reference[kind])
    _require(kind == "object" and isinstance(reference[kind], str), "a value it reads")
    return type(reference[kind][:60], (), {"__module__": "notebook"})()     # cannot be typed


# ---------------------------------------------------------------------------------------------
# Compiling
# ---------------------------------------------------------------------------------------------

def signature(examples):
    """The argument types of a kernel called with ``examples`` (arrays and numbers), as plain
    data: ``[[dtype name, number of dimensions], ...]``, 0 dimensions for a number."""
    return [[np.asarray(example).dtype.name, np.ndim(example)] for example in examples]


def compile_description(description, argument_types, named=None, cc=CC):
    """The PTX of a described kernel for ``argument_types`` (:func:`signature`) on a GPU of
    compute capability ``cc``.  Needs numba with the simulator off, and changes numba for the
    rest of the process: its device functions compile for ``cc`` instead of for a GPU present
    (there is none), so this runs in a process of its own."""
    from numba import cuda
    from numba import types as numba_types
    from numba.cuda import dispatcher
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=tuple(cc))
    function = rebuild(description, named)
    arguments = []
    for dtype, ndim in argument_types:
        _require(dtype in NUMBERS and isinstance(ndim, int) and 0 <= ndim <= 8, "its arguments")
        number = getattr(numba_types, dtype)
        arguments.append(numba_types.Array(number, ndim, "C") if ndim else number)
    try:
        return cuda.compile_ptx(function, tuple(arguments), cc=tuple(cc))[0]
    except Exception as error:          # whatever stops the compiler
        if isinstance(error, ImportError) or type(error).__module__.startswith("cuda.pathfinder"):
            raise CompileError(f"NVIDIA's compiler was not found ({str(error).splitlines()[0]}): "
                               "pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12 into the "
                               "Python that runs this") from None
        raise CompileError(compiler_message(error)) from None


NOISE = re.compile(r"^(Failed in .* pipeline|During: |File |- Resolution failure|raised from "
                   r"|<source |There are \d+ candidate|\^$|\s*$)")
SHORTER = [(r"Function\(<(?:built-in )?function (\w+)[^>]*>\)", r"\1"),   # numpy's dot: dot
           (r"<class '([\w.]+)'>", r"\1"), (r"<module '([\w.]+)'[^>]*>", r"\1"),
           (r" at 0x[0-9a-f]+", "")]
PLAIN_WORDS = {"NRT required": "it makes a new array, which a kernel cannot (numpy's functions do)"}


def compiler_message(error):
    """What the compiler said, from its most telling line on: its first line that is not about
    the compiler's own steps, and what follows it."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    for phrase, words in PLAIN_WORDS.items():
        if phrase in text:
            return words
    lines = [line.strip() for line in text.splitlines() if not NOISE.match(line.strip())]
    text = " ".join(lines)
    for pattern, short in SHORTER:
        text = re.sub(pattern, short, text)
    return text[:2000] or type(error).__name__


def summary(kernel, *examples, cc=CC):
    """The :class:`Summary` of ``kernel`` compiled for arguments like ``examples`` (arrays and
    numbers: their dtypes and dimensions matter, not their values), compiled in a new process
    with the simulator off; CompileError if it does not compile."""
    request = {"description": describe(kernel), "signature": signature(examples), "cc": list(cc)}
    where = str(Path(__file__).resolve().parents[2])
    environment = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0",
                   "PYTHONPATH": os.pathsep.join([where, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "mini.kernels.ptx"], input=json.dumps(request),
                          capture_output=True, text=True, env=environment, timeout=300)
    try:
        reply = json.loads(done.stdout)
    except ValueError:
        raise CompileError(f"the compiler's process stopped: {done.stderr[-2000:]}") from None
    if "error" in reply:
        raise CompileError(reply["error"])
    return Summary.of(reply["ptx"])


def main():
    """``python -m mini.kernels.ptx``: a JSON request on stdin (``description``, ``signature``,
    ``cc``), ``{"ptx": ...}`` or ``{"error": ...}`` on stdout."""
    request = json.loads(sys.stdin.read())
    try:
        reply = {"ptx": compile_description(request["description"], request["signature"],
                                            cc=request["cc"])}
    except (CompileError, ValueError) as error:
        reply = {"error": str(error)}
    sys.stdout.write(json.dumps(reply))


# ---------------------------------------------------------------------------------------------
# Reading PTX
# ---------------------------------------------------------------------------------------------

KINDS = {
    "global loads": re.compile(r"ld\.global\b"),
    "shared loads": re.compile(r"ld\.shared\b"),
    "global stores": re.compile(r"st\.global\b"),
    "shared stores": re.compile(r"st\.shared\b"),
    "barriers": re.compile(r"(bar|barrier)\.sync\b"),
    "multiply-adds": re.compile(r"(fma|mad|mul)(\.r[nzmp])?(\.ftz)?(\.sat)?\.f(16|32|64)$"),
    "float32": re.compile(r"\.f32\b"),
    "float64": re.compile(r"\.f64\b"),
}
"""What :class:`Summary` counts, by opcode (``ld.global.f32``, ``fma.rn.f32``, ...)."""

SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "b32": 4, "u32": 4,
         "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}
SHARED = re.compile(r"\.shared\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$]+)\s*\[(\d*)\]")
LABEL = re.compile(r"^([\w$]+):$")
BRANCH = re.compile(r"^(?:@!?%\w+\s+)?bra(?:\.uni)?\s+([\w$]+);$")
REGISTER = re.compile(r"%(?:n?ctaid|n?tid)\.[xyz]")


@dataclasses.dataclass
class Summary:
    """What a kernel's PTX holds.

    Attributes:
        lines: the instructions, one line each, in the order of the text (all functions).
        ops: the opcode of each (``ld.global.f32``).
        function: the function each belongs to (0 for the first).
        shared: ``{name: bytes}`` of the shared arrays declared.
        loops: ``[(first, last)]``: the instructions (indices into ``lines``) of each loop, from a
            label to the last branch back to it, in the order of the text.
    """

    lines: list
    ops: list
    function: list
    shared: dict
    loops: list

    @classmethod
    def of(cls, ptx):
        lines, ops, function, shared, labels, back = [], [], [], {}, {}, {}
        depth, functions, statement = 0, -1, ""
        for raw in ptx.splitlines():
            line = raw.split("//")[0].strip()
            declared = SHARED.search(line)
            if declared:
                kind, name, count = declared.groups()
                shared[name] = SIZES.get(kind, 1) * int(count or 0)
            if line == "{" or line.endswith(" {") and not statement:
                functions += depth == 0
                depth += 1
            elif line == "}" and not statement:
                depth -= 1
            elif depth and LABEL.match(line) and not statement:
                labels[LABEL.match(line)[1]] = len(lines)
            elif depth and line and not line.startswith("."):
                statement = f"{statement} {line}".strip()      # a call spans several lines
                if not statement.endswith(";"):
                    continue
                target = BRANCH.match(statement)
                if target and target[1] in labels:
                    back[labels[target[1]]] = len(lines)
                lines.append(statement)
                ops.append(re.sub(r"^@!?%\w+\s+", "", statement).split()[0].rstrip(";"))
                function.append(functions)
                statement = ""
        return cls(lines, ops, function, shared, sorted(back.items()))

    def where(self, kind, span=None):
        """The indices of the instructions of ``kind`` (a key of :data:`KINDS`) in ``span``
        (``(first, last)``; all of them by default)."""
        first, last = span or (0, len(self.ops) - 1)
        pattern = KINDS[kind]
        return [i for i in range(first, last + 1) if pattern.search(self.ops[i])]

    def count(self, kind, span=None):
        return len(self.where(kind, span))

    def registers(self):
        """The special registers the kernel reads (``%tid.x``, ``%nctaid.x``, ...)."""
        return sorted({name for line in self.lines for name in REGISTER.findall(line)})

    def inner(self, loop):
        """The loops directly inside ``loop`` (not inside another loop inside it)."""
        inside = [other for other in self.loops if other != loop and _within(other, loop)]
        return _outermost(inside)

    def product_loop(self):
        """The outermost loop that holds multiply-adds (a matmul's loop over k), or None."""
        outermost = _outermost([loop for loop in self.loops if self.count("multiply-adds", loop)])
        return outermost[0] if outermost else None

    def per_step(self, products):
        """Global loads and barriers per step of :meth:`product_loop`, a step being ``products``
        multiply-adds (TILE of them in a tiled matmul's step over k); None without such a loop.

        Where the compiler unrolled the steps (no loop inside holds multiply-adds), one pass
        through the loop makes (its multiply-adds / ``products``) steps; where a loop inside does
        the multiply-adds, one pass is one step, and what that inner loop does counts
        ``products`` / (its multiply-adds) times."""
        loop = self.product_loop()
        if loop is None:
            return None
        inner = [(span, self.count("multiply-adds", span)) for span in self.inner(loop)]
        stepping = [(span, n) for span, n in inner if n]
        outside = set(range(loop[0], loop[1] + 1)).difference(
            *(range(span[0], span[1] + 1) for span, _ in inner))
        steps = 1 if stepping else sum(i in outside for i in self.where("multiply-adds", loop)) \
            / products
        return {kind: (sum(i in outside for i in self.where(kind, loop)) / steps
                       + sum(self.count(kind, span) * products / n for span, n in stepping))
                for kind in ("global loads", "barriers")}

    def per_multiply_add(self, kind):
        """Instructions of ``kind`` per multiply-add in the whole kernel (None without any)."""
        products = self.count("multiply-adds")
        return self.count(kind) / products if products else None

    def unfenced(self, first, then):
        """A pair of instructions (indices), one of kind ``first`` and a later one of kind
        ``then``, with no barrier between them in the order the code runs them (down the text,
        and from a loop's end around to its start); None if there is none.

        ``("shared stores", "shared loads")`` finds a read of shared memory that may run before
        another thread's write to it has landed; ``("shared loads", "shared stores")`` a write
        that may land before another thread has read what it overwrites."""
        pending = None
        for i, op in enumerate(self.ops):
            if i and self.function[i] != self.function[i - 1]:
                pending = None
            if KINDS["barriers"].search(op):
                pending = None
            elif KINDS[then].search(op) and pending is not None:
                return pending, i
            elif KINDS[first].search(op) and pending is None:
                pending = i
        for loop in self.loops:
            fences = self.where("barriers", loop)
            tail = [i for i in self.where(first, loop) if not fences or i > fences[-1]]
            head = [i for i in self.where(then, loop) if not fences or i < fences[0]]
            if tail and head:
                return tail[0], head[0]
        return None


def _within(inner, outer):
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def _outermost(loops):
    """The loops of ``loops`` that are inside none of the others."""
    return [loop for loop in loops
            if not any(other != loop and _within(loop, other) for other in loops)]


if __name__ == "__main__":
    main()
