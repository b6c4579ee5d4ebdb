"""The nbgrader path: the course folder, batch autograding, the preprocessors that judge hidden
cells outside the kernel, the sandboxed kernel and its fork server, and the formgrader's kernels."""
