"""What every schedlab HTML report shares: the page around its body (head, styles, no-fetch
policy, footer naming the folders it was made from), figures inlined as SVG, and the rule for
which table cells are bold.

It imports matplotlib only to draw and no table library, so a report that needs no data frame
(one ``schedlab pack`` run's page) does not load one.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from schedlab import __version__

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CSS = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#ffffff; --soft:#f6f8fa;
        --accent:#0072B2; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 32px 24px 16px; }
h1 { font-size: 1.7rem; margin: 0 0 4px; }
h2 { font-size: 1.2rem; margin: 36px 0 10px; padding-bottom: 4px;
     border-bottom: 1px solid var(--line); }
p.lead { color: var(--muted); margin: 0 0 8px; }
.table-wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 12px; border-bottom: 1px solid var(--line); white-space: nowrap; }
thead th { background: var(--soft); text-align: right; position: sticky; top: 0; }
thead th:first-child, tbody th { text-align: left; font-weight: 600; }
td { text-align: right; }
tbody tr:nth-child(even) { background: #fbfcfd; }
tbody tr:hover { background: #eef4fb; }
tr.meta td { color: var(--muted); }
td.best { font-weight: 700; color: var(--accent); }
td.na { color: #aab; }
dl.defs { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px;
          color: var(--muted); font-size: 0.9rem; margin: 12px 0 0; }
dl.defs dt { font-weight: 600; color: var(--fg); }
dl.defs dd { margin: 0; }
.figures { display: grid; grid-template-columns: 1fr; gap: 20px; }
figure { margin: 0; padding: 12px 12px 8px; border: 1px solid var(--line); border-radius: 6px; }
figure svg { display: block; margin: 0 auto; width: 100%; max-width: 860px; height: auto; }
figcaption { color: var(--muted); font-size: 0.9rem; margin-top: 6px; }
figcaption b { color: var(--fg); }
footer { max-width: 1120px; margin: 24px auto 32px; padding: 12px 24px 0;
         border-top: 1px solid var(--line); color: var(--muted); font-size: 0.85rem; }
footer code { font-size: 0.85rem; }
"""

#: Nothing may be fetched: a stray external reference shows as a console error, not a request.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def page_head(title: str, extra_css: str = "") -> str:
    """The page up to and including its ``<h1>``: shared by every schedlab report, so they all
    carry the same no-fetch policy and styles."""
    e = html.escape
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<link rel="icon" href="data:,">
<title>{e(title)}</title>
<style>{CSS}{extra_css}</style>
</head>
<body>
<main>
<h1>{e(title)}</h1>"""


def html_page(title: str, body: str, sources: Sequence[tuple[str, Path]]) -> str:
    """A self-contained page: the head every report shares, ``body`` (HTML) under the title, and
    the run folders it was made from in the footer."""
    e = html.escape
    folders = "".join(f"<li>{e(label)}: <code>{e(str(f))}</code></li>" for label, f in sources)
    return f"""{page_head(title)}
{body}
</main>
<footer>
<p>Made by schedlab {e(__version__)} from:</p>
<ul>{folders}</ul>
</footer>
</body>
</html>
"""


def inline_svg(fig: Figure, name: str, alt: str) -> str:
    """Inline SVG markup for a figure, with ids made unique to it.

    Several SVGs in one document share one id space; matplotlib's ids are only unique within a
    file, so each figure's ids get a prefix. Text stays text (``svg.fonttype = none``): smaller,
    selectable and searchable in the page.
    """
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    text = re.sub(r'\bid="([^"]+)"', rf'id="{name}-\1"', text)
    text = re.sub(r'href="#([^"]+)"', rf'href="#{name}-\1"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{name}-\1)", text)
    text = text.replace("<svg ", f'<svg role="img" aria-label="{html.escape(alt)}" ', 1)
    return text.strip()


def best_cells(texts: Sequence[str], values: Sequence[float], higher: bool) -> list[bool]:
    """Which cells are best as shown: every cell whose displayed text is the best value's (ties
    are all bold), and none when every cell shows the same."""
    shown = [
        (t, v) for t, v in zip(texts, values, strict=True) if v is not None and math.isfinite(v)
    ]
    if len({t for t, _ in shown}) < 2:
        return [False] * len(texts)
    best = (max if higher else min)(shown, key=lambda tv: tv[1])[0]
    return [t == best for t in texts]
