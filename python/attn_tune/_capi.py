"""ctypes mirror of include/attn_tune/attn_tune.h, and where libattn_tune.so is found.

The library is looked for, in order: $ATTN_TUNE_LIBRARY, next to this package, in the prefix's
lib/ folder when the package was installed by `cmake --install`, and by the system's loader.
Importing the package never loads it; the first call that needs it does. A library of API
version 6 still loads and runs the forward; the backward (attn_tune_backward) needs version 7.
"""
import ctypes
import ctypes.util
import os
import threading
import warnings

API_VERSION = 7  # ATTN_TUNE_API_VERSION this package speaks
OLDEST_API_VERSION = 6  # the oldest library it loads: the forward is the same, only the backward is missing
BACKWARD_API_VERSION = 7  # attn_tune_backward and the choice's variant

OK, INVALID_ARGUMENT, UNSUPPORTED, TABLE, BUNDLE, NO_DEVICE, COMPILE, DEVICE, INTERNAL = range(9)
BF16, FP16 = 0, 1
BHSD, BSHD = 0, 1
SOURCES = {0: "tuned", 1: "bucket", 2: "fallback"}


class AttnTuneError(RuntimeError):
    """A failed call of the library: `status` is its code, the message is the library's."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class LibraryNotFoundError(AttnTuneError, OSError):
    def __init__(self, message):
        AttnTuneError.__init__(self, INTERNAL, message)


class Problem(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("batch", ctypes.c_int64), ("heads", ctypes.c_int64), ("kv_heads", ctypes.c_int64),
                ("q_len", ctypes.c_int64), ("kv_len", ctypes.c_int64), ("head_dim", ctypes.c_int64),
                ("dtype", ctypes.c_int32), ("layout", ctypes.c_int32), ("causal", ctypes.c_int32),
                ("softmax_scale", ctypes.c_float),
                ("q_strides", ctypes.c_int64 * 3), ("kv_strides", ctypes.c_int64 * 3),
                # API version 3: a KV cache (flash_attn_with_kvcache's cache_seqlens and block_table)
                ("cache_seqlens", ctypes.c_void_p), ("block_table", ctypes.c_void_p),
                ("page_size", ctypes.c_int64), ("num_pages", ctypes.c_int64),
                # API version 4: a sliding window and softcap (flash_attn_func's window_size, softcap)
                ("window", ctypes.c_int32), ("softcap", ctypes.c_float),
                ("window_left", ctypes.c_int64), ("window_right", ctypes.c_int64),
                # API version 5: V's own head dim (dv != d), V's and O's strides
                ("head_dim_v", ctypes.c_int64), ("v_strides", ctypes.c_int64 * 3), ("o_strides", ctypes.c_int64 * 3),
                # API version 6: a packed variable-length batch (flash_attn_varlen_func's cu_seqlens_q/_k)
                ("cu_seqlens_q", ctypes.c_void_p), ("cu_seqlens_k", ctypes.c_void_p),
                ("total_q", ctypes.c_int64), ("total_k", ctypes.c_int64)]


class Choice(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("source", ctypes.c_int32),
                ("family", ctypes.c_char * 16), ("config", ctypes.c_char * 32),
                ("from_bundle", ctypes.c_int32),
                # API version 7: the variant's whole name (a backward's: "kv_m32_n64_w4_s2-q_m64_n64_w4_s2").
                # An older library leaves it as new_choice made it, zeroed: "".
                ("variant", ctypes.c_char * 64)]

    def as_dict(self):
        return {"source": SOURCES.get(self.source, str(self.source)), "family": self.family.decode(),
                "config": self.config.decode(), "from_bundle": bool(self.from_bundle),
                "variant": self.variant.decode()}


class ContextOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("device", ctypes.c_int32),
                ("cache_dir", ctypes.c_char_p), ("table", ctypes.c_char_p), ("bundle", ctypes.c_char_p)]


def new_choice():
    c = Choice()
    c.struct_size = ctypes.sizeof(Choice)
    return c


def candidates():
    """The paths tried for the library, in order."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = []
    if os.environ.get("ATTN_TUNE_LIBRARY"):
        paths.append(os.environ["ATTN_TUNE_LIBRARY"])
    paths.append(os.path.join(here, "libattn_tune.so"))
    # <prefix>/lib/pythonX.Y/site-packages/attn_tune -> <prefix>/lib
    paths.append(os.path.normpath(os.path.join(here, "..", "..", "..", "libattn_tune.so")))
    found = ctypes.util.find_library("attn_tune")
    if found:
        paths.append(found)
    return paths


_lock = threading.Lock()
_library = None


def _declare(lib):
    p = ctypes.c_void_p
    lib.attn_tune_api_version.restype = ctypes.c_int
    lib.attn_tune_version_string.restype = ctypes.c_char_p
    lib.attn_tune_last_error.restype = ctypes.c_char_p
    lib.attn_tune_last_warning.restype = ctypes.c_char_p
    lib.attn_tune_context_create.argtypes = [ctypes.POINTER(ContextOptions), ctypes.POINTER(p)]
    lib.attn_tune_context_destroy.argtypes = [p]
    lib.attn_tune_context_destroy.restype = None
    lib.attn_tune_check.argtypes = [p, p, p, p, p, ctypes.POINTER(Problem)]
    lib.attn_tune_forward.argtypes = [p, p, p, p, p, p, ctypes.POINTER(Problem), p, ctypes.POINTER(Choice)]
    lib.attn_tune_choose.argtypes = [p, ctypes.POINTER(Problem), ctypes.POINTER(Choice)]
    lib.attn_tune_synchronize.argtypes = [p, p]
    lib.attn_tune_table_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(p)]
    lib.attn_tune_table_destroy.argtypes = [p]
    lib.attn_tune_table_destroy.restype = None
    lib.attn_tune_table_lookup.argtypes = [p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                           ctypes.POINTER(Problem), ctypes.POINTER(Choice)]
    for name in ("attn_tune_context_create", "attn_tune_check", "attn_tune_forward", "attn_tune_choose",
                 "attn_tune_synchronize", "attn_tune_table_load", "attn_tune_table_lookup"):
        getattr(lib, name).restype = ctypes.c_int
    # A library older than version 7 has no backward (ctypes raises AttributeError on a missing
    # symbol): it still loads for the forward, and backward_function says what is missing.
    if hasattr(lib, "attn_tune_backward"):
        lib.attn_tune_backward.argtypes = [p] * 11 + [ctypes.POINTER(Problem), p, ctypes.POINTER(Choice)]
        lib.attn_tune_backward.restype = ctypes.c_int


def backward_function(lib):
    """lib's attn_tune_backward; AttnTuneError (UNSUPPORTED) naming the library's API version when
    it is older than 7, which has none."""
    version = lib.attn_tune_api_version()
    call = getattr(lib, "attn_tune_backward", None) if version >= BACKWARD_API_VERSION else None
    if call is None:
        raise AttnTuneError(UNSUPPORTED, f"libattn_tune API {version} has no attn_tune_backward: rebuild it "
                                         f"(this package needs API {BACKWARD_API_VERSION} for the backward)")
    return call


def library():
    """The loaded libattn_tune; raises LibraryNotFoundError naming every path tried."""
    global _library
    with _lock:
        if _library is not None:
            return _library
        tried = []
        for path in candidates():
            if os.path.sep in path and not os.path.exists(path):
                tried.append(f"{path} (no such file)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
                continue
            _declare(lib)
            if not OLDEST_API_VERSION <= lib.attn_tune_api_version() <= API_VERSION:
                tried.append(f"{path} (API version {lib.attn_tune_api_version()}, this package needs "
                             f"{OLDEST_API_VERSION} to {API_VERSION})")
                continue
            _library = lib
            return lib
        raise LibraryNotFoundError(
            "libattn_tune.so not found; set ATTN_TUNE_LIBRARY to its path (tried: " + "; ".join(tried) + ")")


def check(status):
    """Raises AttnTuneError for a failed call; what the call warned of (the library prints
    nothing) becomes a Python RuntimeWarning either way."""
    said = library().attn_tune_last_warning()
    if said:
        warnings.warn(said.decode(errors="replace"), RuntimeWarning, stacklevel=3)
    if status != OK:
        raise AttnTuneError(status, library().attn_tune_last_error().decode(errors="replace"))
