"""Lab 5's checks of the sparse pieces: to_csr, spmv_kernel, spmm_kernel and embedding_grad."""
import numpy as np

from autograder.checks import Case
from autograder.checks.lab5.shared import array, odd


# ---------------------------------------------------------------------------------------------
# to_csr, spmv_kernel: sparse matrices (L05 slide 2)
# ---------------------------------------------------------------------------------------------

CSR_HINT = ("data holds the nonzeros row by row (left to right), indices the column of each, and "
            "indptr (rows + 1 entries, starting at 0) says where each row's stretch begins: row r "
            "is data[indptr[r]:indptr[r + 1]], empty when the two are equal.")


def _sparse_dense(rng, shape, density, dtype, empty_rows=0):
    """A random matrix with about ``density`` nonzeros, and ``empty_rows`` rows of zeros."""
    dense = np.where(rng.random(shape) < density, rng.standard_normal(shape), 0.0).astype(dtype)
    dense[rng.choice(shape[0], size=min(empty_rows, shape[0]), replace=False)] = 0.0
    return dense


def _csr(dense):
    """(data, indices, indptr) of a dense matrix: the kernels' inputs, and to_csr's expected
    result (for other matrices than a to_csr check's own)."""
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return dense[rows, cols], cols.astype(np.int64), indptr.astype(np.int64)


def _to_csr_case(dense, what):
    def expected():
        from mini.kernels import sparse
        a = sparse.from_dense(dense)
        return {"data": a.data, "indices": a.indices, "indptr": a.indptr,
                "dtype of data": dense.dtype.name}

    return Case(what=f"to_csr on {what}", probe="to_csr_arrays", inputs={"dense": dense},
                expected=expected, rtol=0, atol=0, hint=CSR_HINT)


def _with_a_negative(rng, dense):
    """``dense`` with one of its nonzero rows (the first row if none is) given a negative entry:
    a nonzero is not a positive entry, and every matrix a to_csr check draws shows it."""
    rows = np.flatnonzero(dense.any(axis=1))
    row = int(rng.choice(rows)) if rows.size else 0
    dense[row, int(rng.integers(dense.shape[1]))] = -rng.uniform(0.5, 2.0)
    return dense


def to_csr_check(rng):
    """Odd shapes, empty rows (the first or the last among them), float64."""
    shape = (odd(rng, 7, 15), odd(rng, 5, 13))
    dense = _sparse_dense(rng, shape, 0.3, np.float64, empty_rows=3)
    dense[int(rng.choice([0, shape[0] - 1]))] = 0.0
    dense = _with_a_negative(rng, dense)
    return _to_csr_case(dense, f"a {shape} float64 matrix with {np.count_nonzero(dense)} "
                        "nonzeros and some rows of zeros")


def to_csr_single_row_check(rng):
    """A single row in float32."""
    dense = _with_a_negative(rng, _sparse_dense(rng, (1, odd(rng, 5, 15)), 0.5, np.float32))
    return _to_csr_case(dense, f"a single row of shape {dense.shape}, float32")


def to_csr_zeros_check(rng):
    """A float32 matrix of zeros: no nonzeros to take the dtype from, so data must get dense's
    dtype some other way."""
    dense = np.zeros((int(rng.integers(1, 5)), int(rng.integers(2, 6))), np.float32)
    return _to_csr_case(dense, f"a matrix of zeros of shape {dense.shape}, float32")


SPMV_HINT = ("thread g of G handles rows g, g + G, ... of A (a grid-stride loop over rows): "
             "y[r] = sum of data[p] * x[indices[p]] for p in range(indptr[r], indptr[r + 1]), "
             "with an accumulator of data's dtype; a row without nonzeros gives 0.")


def _spmv_case(rng, shape, dtype, blocks, threads, hint):
    dense = _sparse_dense(rng, shape, 0.25, dtype, empty_rows=2)
    x = array(rng, shape[1], dtype)
    data, indices, indptr = _csr(dense)
    return Case(what=(f"spmv_kernel launched as kernel[{blocks}, {threads}](data, indices, indptr, "
                      f"x, y) for A of shape {shape} ({np.count_nonzero(dense)} nonzeros, some "
                      f"rows empty), {np.dtype(dtype).name}"),
                probe="spmv_launch",
                inputs={"data": data, "indices": indices, "indptr": indptr, "x": x,
                        "blocks": blocks, "threads": threads},
                expected=lambda: dense.astype(np.float64) @ x.astype(np.float64), hint=hint,
                rtol=1e-5 if dtype == np.float32 else 1e-12,
                atol=1e-5 if dtype == np.float32 else 1e-12)


def spmv_rows_check(rng):
    """More rows than threads: each thread loops over rows."""
    return _spmv_case(rng, (odd(rng, 41, 71), odd(rng, 5, 21)), np.float64, 2, 8, hint=(
        "there are more rows than threads here: a row whose y stays nan was never visited. "
        + SPMV_HINT))


def spmv_float32_check(rng):
    """float32 in, float32 out, fewer rows than threads."""
    return _spmv_case(rng, (odd(rng, 3, 13), odd(rng, 9, 31)), np.float32, 1, 16, hint=(
        "threads past the last row must do nothing. " + SPMV_HINT))


SPMM_HINT = ("Y[r, j] is the sum, over row r's stretch p of data and indices, of data[p] * "
             "X[indices[p], j], in an accumulator of data's dtype (0 for an empty row). A thread "
             "computes the elements of Y its position reaches: (col, row) = cuda.grid(2), rows "
             "row, row + rows, ... and columns col, col + cols, ... with (cols, rows) = "
             "cuda.gridsize(2); the x index runs along Y's columns.")


def _spmm_case(rng, dense, n, grid, block, hint, what=None):
    dtype = dense.dtype
    x = array(rng, (dense.shape[1], n), dtype)
    data, indices, indptr = _csr(dense)
    tight = dtype == np.float32
    what = what or f"{np.count_nonzero(dense)} nonzeros, some rows empty"
    return Case(what=(f"spmm_kernel launched as kernel[{grid}, {block}](data, indices, indptr, X, "
                      f"Y) for A of shape {dense.shape} ({what}) and X of shape {x.shape}, "
                      f"{np.dtype(dtype).name}"),
                probe="spmm_launch",
                inputs={"data": data, "indices": indices, "indptr": indptr, "x": x,
                        "grid": grid, "block": block},
                expected=lambda: dense.astype(np.float64) @ x.astype(np.float64), hint=hint,
                rtol=1e-5 if tight else 1e-12, atol=1e-5 if tight else 1e-12)


def spmm_grid_stride_check(rng):
    """More rows and columns of Y than threads: strides along both axes; empty rows."""
    dense = _sparse_dense(rng, (odd(rng, 17, 31), odd(rng, 5, 13)), 0.3, np.float64,
                          empty_rows=2)
    return _spmm_case(rng, dense, odd(rng, 9, 21), (1, 1), (4, 4), hint=(
        "Y has more rows and columns than the grid has threads here: an element that stays nan "
        "was never visited, so each thread loops along both axes. " + SPMM_HINT))


def spmm_embedding_check(rng):
    """The embedding case: each row of A averages the rows of X (the table) that its sentence's
    unmasked ids pick, a word used twice counting twice."""
    vocab, batch, length = int(rng.integers(12, 30)), int(rng.integers(3, 7)), 5
    ids = rng.integers(0, vocab // 2, size=(batch, length))
    words = rng.integers(1, length + 1, size=batch)         # the rest of each sentence is padding
    dense = np.zeros((batch, vocab))
    for b in range(batch):
        np.add.at(dense[b], ids[b, :words[b]], 1.0 / words[b])
    return _spmm_case(rng, dense, int(rng.integers(3, 9)), (2, 1), (4, 4), what=(
        f"a bag of words: row b holds 1/n_b at each of the n_b = {words.tolist()} unmasked ids "
        "of sentence b, so Y is each sentence's mean embedding"), hint=(
        "a sentence's row of A picks the rows of the table X that its ids name, so Y[b] is their "
        "mean. " + SPMM_HINT))


def spmm_float32_check(rng):
    """float32 in, float32 out, a grid larger than Y."""
    dense = _sparse_dense(rng, (odd(rng, 3, 9), odd(rng, 9, 21)), 0.3, np.float32,
                          empty_rows=1)
    return _spmm_case(rng, dense, odd(rng, 3, 7), (2, 2), (8, 4), hint=(
        "Y has the dtype of data (float32 here), and threads past Y's last row or column must "
        "do nothing. " + SPMM_HINT))


def spmm_threads_check(rng):
    """Who stored each element of Y: the thread whose cuda.grid(2) reaches it, x along columns."""
    rows, n, grid, block = odd(rng, 9, 15), odd(rng, 11, 19), (2, 1), (4, 2)
    dense = _sparse_dense(rng, (rows, 6), 0.4, np.float64)
    data, indices, indptr = _csr(dense)
    columns, lines = grid[0] * block[0], grid[1] * block[1]

    def expected():
        r, j = np.indices((rows, n))
        return np.stack([j % columns, r % lines], axis=-1)

    return Case(
        what=(f"spmm_kernel launched as kernel[{grid}, {block}](data, indices, indptr, X, Y) "
              f"with Y of shape {(rows, n)}: for each element (r, j) of Y, the (x, y) = "
              "cuda.grid(2) of the thread that stored it (the simulator's record of the launch)"),
        probe="spmm_writers", inputs={"data": data, "indices": indices, "indptr": indptr,
                                      "x": array(rng, (6, n), np.float64),
                                      "grid": grid, "block": block},
        expected=expected, rtol=0, atol=0, hint=(
            f"element (r, j) is stored by the thread (x, y) = (j % {columns}, r % {lines}): "
            "threads next to each other in x work on neighbouring COLUMNS of one row of Y, so "
            "that a warp reads neighbouring elements of a row of X (coalesced); -1 means no "
            "thread stored it. " + SPMM_HINT))


# ---------------------------------------------------------------------------------------------
# embedding_grad: the row-sparse gradient of an embedding lookup (lab 4's model)
# ---------------------------------------------------------------------------------------------

EMBEDDING_HINT = ("return (rows, values): rows the distinct ids that were looked up, ascending, "
                  "and values[i] the sum of grad_out over every position whose id is rows[i] (a "
                  "word used twice gets both contributions, slide 20's fan-out); never a "
                  "(vocab_size, D) array.")


def _embedding_case(rng, ids, dim, vocab_size, what, dense_reference):
    grad_out = rng.standard_normal(ids.shape + (dim,))

    def expected():
        rows = np.unique(ids)
        if dense_reference:    # the gradient mini's take computes, then its looked-up rows
            import mini
            table = np.zeros((vocab_size, dim))
            dense = mini.grad(lambda e: mini.sum(mini.take(e, ids, axis=0) * grad_out))(table)
            return {"rows": rows, "values": dense[rows]}
        values = np.zeros((rows.size, dim))
        np.add.at(values, np.searchsorted(rows, ids.reshape(-1)), grad_out.reshape(-1, dim))
        return {"rows": rows, "values": values}

    return Case(what=(f"embedding_grad(ids, grad_out, vocab_size={vocab_size}) with ids of shape "
                      f"{ids.shape} ({what}) and grad_out of shape {grad_out.shape}"),
                probe="embedding_rows",
                inputs={"ids": ids, "grad_out": grad_out, "vocab_size": vocab_size},
                expected=expected, rtol=1e-10, atol=1e-12, hint=EMBEDDING_HINT)


def embedding_batch_check(rng):
    """A (B, T) batch of ids with repeats, compared with mini's dense gradient's rows."""
    vocab_size = int(rng.integers(20, 40))
    ids = rng.integers(0, vocab_size // 2, size=(int(rng.integers(2, 5)), int(rng.integers(3, 8))))
    return _embedding_case(rng, ids, int(rng.integers(2, 6)), vocab_size,
                           "words repeat", dense_reference=True)


def _embedding_shape_case(rng, shape):
    vocab_size = int(rng.integers(20, 40))
    ids = rng.integers(0, vocab_size // 3, size=shape)
    return _embedding_case(rng, ids, int(rng.integers(2, 5)), vocab_size,
                           f"words repeat, ids of {len(shape)} dimension"
                           f"{'s' if len(shape) > 1 else ''}", dense_reference=True)


def embedding_one_dimension_check(rng):
    """ids of one dimension (a single sentence): any shape S, not only (B, T)."""
    return _embedding_shape_case(rng, (int(rng.integers(5, 12)),))


def embedding_three_dimensions_check(rng):
    """ids of three dimensions."""
    return _embedding_shape_case(rng, (2, int(rng.integers(2, 4)), int(rng.integers(2, 5))))


def embedding_huge_vocabulary_check(rng):
    """10^12 rows: a dense gradient would need terabytes, the row-sparse one a few numbers."""
    ids = rng.integers(0, 10**12, size=(2, 5))
    ids[1, 3] = ids[0, 1]
    return _embedding_case(rng, ids, 3, 10**12, "a vocabulary of 10^12 words",
                           dense_reference=False)
