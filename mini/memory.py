"""Keep the memory one training step frees for the next step.

Every step of a model allocates the same arrays again: activations, their gradients, the
gradient of every parameter, most of them hundreds of kilobytes.  glibc's ``malloc`` gives a block
that large straight back to the operating system when it is freed (``munmap``, or trimming the
top of its heap), so the next step's arrays are fresh pages, and the kernel zeroes and maps each
4 KB page again on its first touch: for the sentiment classifier's step that took more time than
all its arithmetic.  :func:`keep_freed_memory` raises the two limits behind that (``mallopt``), so
freed blocks up to 4 MB stay in the heap and up to 64 MB of free heap is kept, ready for the next
step.  Frameworks do the same with allocators of their own (PyTorch's caching allocator on GPUs).

It changes the whole process, as any allocator setting does; elsewhere than glibc (macOS, musl)
it does nothing.
"""
import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3        # mallopt's parameters, from glibc's malloc.h
LARGEST_KEPT_BLOCK = 4 << 20                        # bigger arrays still come from mmap
FREE_HEAP_KEPT = 64 << 20                           # free memory at the heap's top, not trimmed


def keep_freed_memory():
    """Make glibc keep freed blocks of up to 4 MB, and up to 64 MB of free heap, for reuse."""
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):       # not glibc
        return
    mallopt(M_MMAP_THRESHOLD, LARGEST_KEPT_BLOCK)
    mallopt(M_TRIM_THRESHOLD, FREE_HEAP_KEPT)
