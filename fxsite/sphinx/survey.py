"""``{zoo-survey} PART``: the model-zoo survey page, rendered from the committed data.

``PART`` is ``summary`` (per zoo and tool: models captured and matching eager),
``causes`` (failures grouped by cause, each linked to the guide's entry where
there is one) or ``models`` (every model and tool, in a table filtered by
inline JavaScript: no external script). Each part covers every committed
``drift/torch-<version>/survey.json``: the reference torch's (the one
``constraints.txt`` pins) first, then the others newest first; a partial survey
says so. The tables are built when the page is read, not executed in a cell:
the data is checked by ``tests/test_survey_sample.py``, not by output snapshots.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

PARTS = ("summary", "causes", "models")


def load_surveys(drift: Path, reference: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``(torch version, survey)`` for every ``drift/torch-*/survey.json``: ``reference`` first, then newest first."""
    found = []
    for path in drift.glob("torch-*/survey.json"):
        version = path.parent.name.removeprefix("torch-")
        found.append((version, json.loads(path.read_text())))
    return sorted(found, key=lambda item: (item[0] != reference,
                                           [-int(p) if p.isdigit() else 0 for p in re.split(r"[.+]", item[0])]))


def _slug(version: str) -> str:
    return "survey-" + re.sub(r"\W", "-", version)


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def _paragraph(*children: nodes.Node | str, **attributes: Any) -> nodes.paragraph:
    para = nodes.paragraph(**attributes)
    para += [nodes.Text(c) if isinstance(c, str) else c for c in children]
    return para


def _table(header: list[str], rows: list[list[nodes.Node | str]], classes: list[str] | None = None) -> nodes.table:
    table = nodes.table(classes=classes or [])
    group = nodes.tgroup(cols=len(header))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in header]
    head, body = nodes.thead(), nodes.tbody()
    group += [head, body]
    for target, cells in ((head, header), *((body, r) for r in rows)):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += cell if isinstance(cell, nodes.paragraph) else _paragraph(cell)
            row += entry
        target += row
    return table


def _cause_cell(cause) -> nodes.paragraph:
    """The cause's pattern, and one full message when the pattern left parts out."""
    para = _paragraph(nodes.literal(cause.pattern, cause.pattern))
    if cause.example != cause.pattern:
        para += [nodes.Text(" e.g. "), nodes.literal(cause.example, cause.example)]
    return para


def install_failures(folder: Path) -> dict[str, str]:
    """Why each library could not be installed beside a torch, as its drift report recorded (pip's own error).

    The survey itself only sees that the library does not import; the side environment that
    tried to install it knows why.
    """
    report = folder / "report.json"
    if not report.is_file():
        return {}
    return dict(json.loads(report.read_text()).get("unavailable", {}))


def stale_records(survey: dict[str, Any]) -> int:
    """How many surveyed models of ``survey`` were recorded by other survey code than this checkout's.

    Counted when the page is built, against today's :func:`fxsite.survey.data.fxguide_key`, not
    taken from the file: a change of the tools after the survey ran makes its records stale.
    """
    from fxsite.survey.data import fxguide_key

    key = fxguide_key()
    return sum(m["status"] == "surveyed" and m.get("fxguide") != key for m in survey["models"])


class ZooSurvey(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        part = self.arguments[0]
        if part not in PARTS:
            raise self.error(f"zoo-survey: PART must be one of {', '.join(PARTS)}, not {part!r}")
        from fxsite.drift.report import REFERENCE_TORCH

        drift = Path(self.env.app.confdir) / "drift"
        surveys = load_surveys(drift, REFERENCE_TORCH)
        from fxsite.survey.data import survey_sources
        for source in survey_sources():  # which records are stale depends on today's survey code
            self.env.note_dependency(str(source))
        for version, _ in surveys:
            self.env.note_dependency(str(drift / f"torch-{version}" / "survey.json"))
            if (drift / f"torch-{version}" / "report.json").is_file():  # why a library could not be installed
                self.env.note_dependency(str(drift / f"torch-{version}" / "report.json"))
        if not surveys:
            return [_paragraph("No survey has been committed yet: run make survey.")]
        result: list[nodes.Node] = []
        for version, survey in surveys:
            role = " (the reference torch)" if version == REFERENCE_TORCH else ""
            result.append(nodes.rubric(text=f"torch {version}{role}"))
            result += getattr(self, f"_{part}")(version, survey)
        if part == "summary":
            surveyed = {version for version, _ in surveys}
            for report in sorted(drift.glob("torch-*/report.json")):
                version = report.parent.name.removeprefix("torch-")
                if version not in surveyed:
                    self.env.note_dependency(str(report))
                    result.append(_paragraph(f"torch {version}: checked by the drift guard, not surveyed yet "
                                             f"(make drift TORCH={version} SURVEY=1 surveys it)."))
        return result

    # -- parts ----------------------------------------------------------------

    def _summary(self, version: str, survey: dict[str, Any]) -> list[nodes.Node]:
        from fxsite.survey.causes import TOOL_TITLES, summary

        v = survey["versions"]
        runs = survey.get("runs", [])
        wall = sum(r["wall_seconds"] for r in runs)
        workers = sorted({str(r["workers"]) for r in runs})
        model_time = sum(m.get("seconds", 0) for m in survey["models"])
        said = (f"torchvision {v['torchvision']}, timm {v['timm']}, transformers {v['transformers']}, "
                f"Python {v['python']}. The records come from {len(runs)} run(s) on {'/'.join(workers)} "
                f"pytest-xdist worker(s), {_duration(wall)} of wall time in all; the models' own times add up "
                f"to {_duration(model_time)}, what the whole survey takes on one worker.")
        out: list[nodes.Node] = [_paragraph(said)]
        if survey["missing"]:
            warning = nodes.warning()
            warning += _paragraph(f"Partial survey: {survey['missing']} of {len(survey['models'])} models have "
                                  f"no record yet; they are listed as not surveyed in the table of every model.")
            out.append(warning)
        installed = install_failures(Path(self.env.app.confdir) / "drift" / f"torch-{version}")
        for zoo, why in survey.get("unavailable", {}).items():
            note = nodes.note()
            reason = (f"its library cannot be installed beside this torch: {installed[zoo]}" if zoo in installed
                      else f"its library does not import with this torch ({why})")
            note += _paragraph(f"{zoo} is not surveyed on torch {version}: {reason}. The other zoos are.")
            out.append(note)
        stale = stale_records(survey)
        if stale:
            warning = nodes.warning()
            warning += _paragraph(f"{stale} of the surveyed models were recorded with an earlier version "
                                  f"of fxguide's tools or of the survey than this site's, so their results may "
                                  f"differ today; `make survey SURVEY_ARGS=--resume` records them again.")
            out.append(warning)
        rows = []
        for row in summary(survey["models"], survey["tools"]):
            if row["zoo"] in survey.get("unavailable", {}):
                rows.append([row["zoo"], "none (library unavailable)", *("n/a" for _ in survey["tools"])])
                continue
            cells: list[nodes.Node | str] = [row["zoo"], f"{row['surveyed']} of {row['models']}"]
            for tool in survey["tools"]:
                counts = row["tools"].get(tool)
                cells.append("n/a" if counts is None else f"{counts.get('captured', 0)} / {counts.get('matches', 0)}")
            rows.append(cells)
        header = ["zoo", "surveyed", *(TOOL_TITLES[t] for t in survey["tools"])]
        out.append(_table(header, rows, classes=["survey-summary"]))
        return out

    def _causes(self, version: str, survey: dict[str, Any]) -> list[nodes.Node]:
        from fxsite.survey.causes import TOOL_TITLES, causes

        rows = []
        for number, cause in enumerate(causes(survey["models"]), 1):
            anchor = f"{_slug(version)}-cause-{number}"
            per_tool = ", ".join(f"{TOOL_TITLES[t]} {len(keys)}" for t, keys in cause.models.items())
            keys = sorted({k for ks in cause.models.values() for k in ks})
            shown = ", ".join(k.split("/", 1)[1] for k in keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
            rows.append([
                _paragraph(str(number), ids=[anchor]),
                cause.stage,
                _cause_cell(cause),
                per_tool,
                shown,
                _paragraph(self._section_link(cause.link)) if cause.link else "unclassified",
            ])
        if not rows:
            return [_paragraph("No failures.")]
        return [_table(["#", "when", "cause", "tools (models)", "models", "in the guide"], rows,
                       classes=["survey-causes"])]

    def _section_link(self, section) -> nodes.reference:
        """A link to a guide section (:class:`fxguide.diagnose.causes.Section`), relative to this page."""
        uri = self.env.app.builder.get_relative_uri(self.env.docname, section.page)
        if section.anchor:
            uri += "#" + section.anchor
        return nodes.reference("", "explained here", refuri=uri, internal=True)

    def _models(self, version: str, survey: dict[str, Any]) -> list[nodes.Node]:
        return [nodes.raw("", models_html(version, survey), format="html")]


def _cell(result: dict[str, Any] | None, anchors: dict[tuple[str, str], str]) -> tuple[str, str]:
    """HTML of one tool's cell and its outcome word (for the filter)."""
    from fxguide.diagnose.messages import pattern, split as _split
    from fxsite.survey.causes import failure

    if result is None:
        return '<td class="na">n/a</td>', "n/a"
    failed = failure(result)
    if failed is None:
        return f'<td class="ok" title="captured; matches eager">✓ {result["nodes"]}</td>', "matches"
    stage, text = failed
    href = anchors.get((stage, pattern(*_split(text))), "")
    label = {"capture": "✗", "second input": "≠", "eager": "–"}[stage]
    short = html.escape(_split(text)[0] or text[:30])
    nodes_ = f" {result['nodes']}" if result.get("nodes") else ""
    outcome = {"capture": "fails", "second input": "differs", "eager": "n/a"}[stage]
    link = f'<a href="#{href}">{short}</a>' if href else short
    return (f'<td class="{outcome}" title="{html.escape(text)}">{label}{nodes_} {link}</td>', outcome)


def models_html(version: str, survey: dict[str, Any]) -> str:
    """The filterable table of every model: a form, a table and a few lines of inline script."""
    from fxsite.survey.causes import TOOL_TITLES, causes

    slug = _slug(version)
    anchors = {(c.stage, c.pattern): f"{slug}-cause-{n}" for n, c in enumerate(causes(survey["models"]), 1)}
    tools = survey["tools"]
    rows = []
    for m in survey["models"]:
        outcomes, cells = [], []
        if m["status"] != "surveyed":
            cells.append(f'<td colspan="{len(tools)}" class="skipped">not surveyed: {html.escape(m["reason"])}</td>')
            outcomes = ["not-surveyed"] * len(tools)
        else:
            for tool in tools:
                cell, outcome = _cell(m["tools"].get(tool), anchors)
                cells.append(cell)
                outcomes.append(outcome)
        params = f"{m['params'] / 1e6:.1f} M" if m.get("params") is not None else ""
        about = html.escape(f"input {m['input']}" + (f", {params} parameters" if params else ""))
        rows.append(
            f'<tr data-zoo="{html.escape(m["zoo"])}" data-outcomes="{" ".join(outcomes)}">'
            f'<td title="{about}">{html.escape(m["model"])}</td>'
            f'<td>{html.escape(m["zoo"])} <small>{html.escape(m["category"])}</small></td>'
            + "".join(cells) + "</tr>")
    tool_options = "".join(f'<option value="{i}">{html.escape(TOOL_TITLES[t])}</option>' for i, t in enumerate(tools))
    zoo_options = "".join(f'<option>{z}</option>' for z in dict.fromkeys(m["zoo"] for m in survey["models"]))
    header = "".join(f"<th>{h}</th>" for h in ("model", "zoo, category",
                                               *(html.escape(TOOL_TITLES[t]) for t in tools)))
    return f"""
<style>{STYLE}</style>
<div class="zoo-survey" id="{slug}-models">
<form class="zoo-survey-filter" onsubmit="return false">
<input type="search" placeholder="model, category or error" aria-label="filter by text">
<select aria-label="zoo"><option value="">every zoo</option>{zoo_options}</select>
<select aria-label="tool"><option value="">any tool</option>{tool_options}</select>
<select aria-label="outcome"><option value="">any outcome</option><option value="matches">captured, matches eager</option>
<option value="differs">captured, differs from eager</option><option value="fails">fails to capture</option>
<option value="not-surveyed">not surveyed</option></select>
<span class="zoo-survey-count"></span>
</form>
<div style="overflow-x:auto"><table class="table zoo-survey-table">
<thead><tr>{header}</tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table></div>
</div>
<script>
(function () {{
  const root = document.getElementById("{slug}-models");
  const [text, zoo, tool, outcome] = root.querySelectorAll("input, select");
  const count = root.querySelector(".zoo-survey-count");
  const rows = Array.from(root.querySelectorAll("tbody tr"));
  function apply() {{
    const words = text.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let shown = 0;
    for (const row of rows) {{
      const outcomes = row.dataset.outcomes.split(" ");
      const wanted = outcome.value === "" ? true :
        (tool.value === "" ? outcomes.includes(outcome.value) : outcomes[Number(tool.value)] === outcome.value);
      const haystack = row.textContent.toLowerCase() + " " + Array.from(row.cells).map(c => c.title).join(" ").toLowerCase();
      const visible = wanted && (zoo.value === "" || row.dataset.zoo === zoo.value) &&
        words.every(w => haystack.includes(w));
      row.hidden = !visible;
      shown += visible;
    }}
    count.textContent = shown + " of " + rows.length + " models";
  }}
  for (const control of [text, zoo, tool, outcome]) control.addEventListener("input", apply);
  apply();
}})();
</script>
"""


STYLE = """
.zoo-survey-table td.ok { color: #116329; }
.zoo-survey-table td.fails { color: #a40e26; }
.zoo-survey-table td.differs { color: #6f4400; }
html[data-theme="dark"] .zoo-survey-table td.ok { color: #7ee787; }
html[data-theme="dark"] .zoo-survey-table td.fails { color: #ffa198; }
html[data-theme="dark"] .zoo-survey-table td.differs { color: #e3b341; }
.zoo-survey-table td, .zoo-survey-table th { white-space: nowrap; font-size: 0.85em; padding: 0.2em 0.5em; }
.zoo-survey-table td:first-child, .zoo-survey-table th:first-child {
  position: sticky; left: 0; background: var(--pst-color-background, #fff); z-index: 1; }
.zoo-survey-filter { display: flex; gap: 0.5em; flex-wrap: wrap; margin-bottom: 0.5em; }
@media (max-width: 40em) {
  /* a phone: the model column stays put, cells keep their mark and node count, the error name
     moves to the cell's tooltip, and the category goes */
  .zoo-survey-table td a, .zoo-survey-table td small { display: none; }
  .zoo-survey-table td, .zoo-survey-table th { font-size: 0.75em; padding: 0.15em 0.3em; }
  .zoo-survey-filter input, .zoo-survey-filter select { flex: 1 1 45%; min-width: 0; }
}
"""


def setup(app) -> None:
    app.add_directive("zoo-survey", ZooSurvey)
