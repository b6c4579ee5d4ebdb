"""What the nbgrader path keeps of a cell's outputs: text cut to size, the lab's pictures kept for
the feedback, and no way for a notebook to bloat the gradebook with pictures."""
import base64

from nbformat import v4

from autograder.nbgrader_path.preprocessors import CutOutput


def _picture(chars):
    return base64.b64encode(b"\x89PNG" + bytes(chars * 3 // 4)).decode()[:chars]


def _notebook(*outputs):
    return v4.new_notebook(cells=[v4.new_code_cell("plot()", outputs=list(outputs))])


def _cut(nb):
    return CutOutput().preprocess(nb, {})[0].cells[0].outputs


def test_a_plot_stays_and_long_text_is_cut():
    plot = v4.new_output("display_data", data={"image/png": _picture(60_000),
                                               "text/plain": "<Figure>"})
    text = v4.new_output("stream", name="stdout", text="x" * 50_000)
    kept_plot, kept_text = _cut(_notebook(plot, text))
    assert kept_plot["data"]["image/png"] == plot["data"]["image/png"]
    assert len(kept_text["text"]) < 20_100 and "30000 more characters cut" in kept_text["text"]


def test_a_huge_picture_or_too_many_pictures_are_left_out():
    huge = v4.new_output("display_data",
                         data={"image/png": _picture(CutOutput.max_image_chars + 1)})
    assert "image/png" not in _cut(_notebook(huge))[0]["data"]
    assert "characters left out" in _cut(_notebook(huge))[0]["data"]["text/plain"]

    each = CutOutput.max_image_chars
    many = [v4.new_output("display_data", data={"image/png": _picture(each)}) for _ in range(15)]
    kept = [o for o in _cut(_notebook(*many)) if "image/png" in o["data"]]
    assert len(kept) == CutOutput.max_notebook_image_chars // each


def test_other_large_data_is_left_out():
    blob = v4.new_output("display_data", data={"application/x-blob": "b" * 30_000})
    assert _cut(_notebook(blob))[0]["data"] == {
        "text/plain": "(application/x-blob output of 30000 characters left out)"}
