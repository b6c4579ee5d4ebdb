"""Hidden checks of lab5_kernels: the CUDA kernels map_kernel, zip_kernel, reduce_kernel,
matmul_tiled, spmv_kernel and spmm_kernel, the derived traffic count tiled_traffic, the CSR
conversion to_csr and the row-sparse embedding_grad (the grader half).

Each kernel is judged twice.  By what it computes: the student half (:mod:`autograder.probes.lab5`)
launches it with a launch configuration the message states (``kernel[blocks, threads](...)``), on
inputs drawn from the seed (sizes of 1, sizes smaller than one block, odd sizes that are no
multiple of any tile, more elements than threads), on Numba's CUDA simulator where there is no
GPU, and outputs start as NaN, so that an element a kernel never writes shows up as ``got nan``.
A check's function may also name the thread that calls it (``lambda v: cuda.grid(1)``), so that
the output says which thread computed each element, or count the calls along the longest chain of
a reduction.  Expected values come from numpy in float64 here; nothing here runs mini's kernels.
And by what it compiles to: the kernel's code, sent as data, is compiled here for a real NVIDIA
GPU in a process that runs no student code (:mod:`autograder.checks.ptx`), and its PTX read as
facts (shared arrays, barriers, loads per step, float64 instructions).  Where no function of the
check can name its thread (SpMM), the simulator's record of who stored what says it
(``mini.kernels.traffic``).

Sizes stay small (at most ~40 per matrix side, ~1500 elements): on the simulator every CUDA thread
is a Python thread, and one launch takes at most a few seconds.  The value checks launch with the
notebook's ``TILE`` and ``THREADS``; the checks of structure set them (``WORK_TILE``,
``WORK_THREADS``), so that what is expected does not depend on the notebook.
"""
from autograder.checks.ptx import (map_code_check, matmul_code_check, reduce_code_check,
                                   spmm_code_check, spmv_code_check, zip_code_check)
from autograder.checks.lab5.kernels import (map_float32_check, map_grid_stride_check,
                                            map_more_threads_check, map_threads_check,
                                            reduce_max_check, reduce_sum_check, reduce_tiny_check,
                                            reduce_tree_check, zip_float32_check,
                                            zip_grid_stride_check, zip_small_check,
                                            zip_threads_check)
from autograder.checks.lab5.matmul import (matmul_awkward_check, matmul_float32_check,
                                           matmul_multiple_check, matmul_one_column_check,
                                           matmul_one_row_check, matmul_tiny_check,
                                           traffic_edges_check, traffic_multiples_check)
from autograder.checks.lab5.shared import float32, layout
from autograder.checks.lab5.sparse import (embedding_batch_check,
                                           embedding_huge_vocabulary_check,
                                           embedding_one_dimension_check,
                                           embedding_three_dimensions_check, spmm_embedding_check,
                                           spmm_float32_check, spmm_grid_stride_check,
                                           spmm_threads_check, spmv_float32_check, spmv_rows_check,
                                           to_csr_check, to_csr_single_row_check,
                                           to_csr_zeros_check)

CHECKS = {
    "map_kernel": {
        "the values, more threads than elements and float32 included": (
            4, [map_more_threads_check, map_float32_check]),
        "a grid-stride loop: fewer threads than elements": (2, [map_grid_stride_check]),
        "element i computed by thread i mod the grid's size": (2, [map_threads_check]),
        "compiled: a stride of the grid's size": (1, [layout(map_code_check)]),
        "compiled: float32 throughout": (1, [float32(map_code_check)])},
    "zip_kernel": {
        "the values, more threads than elements and float32 included": (
            4, [zip_small_check, zip_float32_check]),
        "a grid-stride loop along both axes": (2, [zip_grid_stride_check]),
        "each entry computed by the thread whose cuda.grid(2) reaches it": (
            2, [zip_threads_check]),
        "compiled: strides of the grid's size": (1, [layout(zip_code_check)]),
        "compiled: float32 throughout": (1, [float32(zip_code_check)])},
    "reduce_kernel": {
        "one partial per block, for any fold": (4, [reduce_tiny_check, reduce_sum_check,
                                                    reduce_max_check]),
        "a tree of folds, each value folded once": (2, [reduce_tree_check]),
        "compiled: one shared array, read in a tree between barriers": (
            3, [layout(reduce_code_check)]),
        "compiled: float32 throughout": (1, [float32(reduce_code_check)])},
    "matmul_tiled": {
        "the product, for any shape": (6, [matmul_tiny_check, matmul_multiple_check,
                                           matmul_awkward_check, matmul_one_row_check,
                                           matmul_one_column_check, matmul_float32_check]),
        "compiled: shared tiles, one load of A and of B per step, barriers": (
            3, [layout(matmul_code_check)]),
        "compiled: float32 throughout": (1, [float32(matmul_code_check)])},
    "tiled_traffic": {"sides that are multiples of the tile": (1, [traffic_multiples_check]),
                      "edge tiles: nothing loaded past the edges": (1, [traffic_edges_check])},
    "to_csr": {"a matrix with empty rows": (1, [to_csr_check]),
               "a single row, and a matrix of zeros with its dtype kept": (
                   1, [to_csr_single_row_check, to_csr_zeros_check])},
    "spmv_kernel": {"the product, empty rows included": (2, [spmv_rows_check]),
                    "float32 values": (1, [spmv_float32_check]),
                    "compiled: a stride of the grid's size": (1, [layout(spmv_code_check)]),
                    "compiled: float32 throughout": (1, [float32(spmv_code_check)])},
    "spmm_kernel": {
        "the product, empty rows and the embedding case included": (
            4, [spmm_grid_stride_check, spmm_embedding_check]),
        "float32 values": (2, [spmm_float32_check]),
        "each element stored by the thread whose cuda.grid(2) reaches it": (
            2, [spmm_threads_check]),
        "compiled: strides of the grid's size": (1, [layout(spmm_code_check)]),
        "compiled: float32 throughout": (1, [float32(spmm_code_check)])},
    "embedding_grad": {"a batch in which words repeat": (1, [embedding_batch_check,
                                                             embedding_one_dimension_check,
                                                             embedding_three_dimensions_check]),
                       "a vocabulary too large for a dense gradient": (
                           1, [embedding_huge_vocabulary_check])},
}
