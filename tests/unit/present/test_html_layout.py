"""The HTML report as MLflow's artifact viewer shows it (about 870 px wide, issue 46): the
differences first, a field name breaking only after its dots, why and source under each row
rather than in columns cut off at the right."""

from __future__ import annotations

import re

from mlflow_fingerprint import diff
from mlflow_fingerprint.present import render
from support.records import cpu_record, edit, write


def test_differences_come_first_with_names_breaking_at_dots_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = edit(cpu_record(), **{"program.options.num-workers": "0", "params.lr": "0.1"})
    b = edit(cpu_record(), **{"program.options.num-workers": "2", "params.lr": "0.2"})
    page = render(diff(write(tmp_path, "a", a), write(tmp_path, "b", b)), "html")
    assert (
        page.index("<h2>Differences") < page.index("<h2>Metrics") if "<h2>Metrics" in page else True
    )
    assert "<code>program.<wbr>options.<wbr>num-workers</code>" in page
    assert "overflow-wrap:anywhere" not in page.split(".source")[0]  # no name cut mid-word
    heads = re.findall(r"<table><thead><tr>(.*?)</tr>", page)
    assert heads[0] == "<th>#</th><th>field</th><th>A → B</th><th>effect</th>"
    assert 'class="why" colspan="3"' in page  # why and its sources: a row across the table
