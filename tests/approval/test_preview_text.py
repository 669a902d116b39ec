"""A preview as plain text, the way e-mails and chat notifications show it: a dict as ``key: value`` lines, lists
joined with commas, a missing value as a dash, a failed preview as its error."""

from toolcalling.approval import Preview


def test_a_dict_preview_is_one_line_per_key_with_lists_joined_and_nothing_as_a_dash():
    preview = Preview(value={"orders": ["A-1", "B-2"], "note": None, "total": 3, "nested": [["x", None]]})
    assert preview.as_text() == "orders: A-1, B-2\nnote: -\ntotal: 3\nnested: x, -"
    assert preview.rows == [("orders", ["A-1", "B-2"]), ("note", None), ("total", 3), ("nested", [["x", None]])]
    assert not preview.is_text


def test_text_lists_and_nothing_on_their_own():
    assert Preview(value="Refund 20.00 to alice").as_text() == "Refund 20.00 to alice"
    assert Preview(value="Refund 20.00 to alice").is_text and Preview(value="x").rows == []
    assert Preview(value=["A-1", 2]).as_text() == "A-1, 2"
    assert Preview(value=None).as_text() == "-"


def test_a_failed_preview_shows_its_error():
    preview = Preview(error="PermissionError: the counter 'locked' cannot be read")
    assert preview.as_text() == "(the preview failed: PermissionError: the counter 'locked' cannot be read)"
    assert preview.as_data() == {"value": None, "error": "PermissionError: the counter 'locked' cannot be read"}
