"""User-supplied webhook bodies, filled with a single-pass ``$PLACEHOLDER`` replace.

Never the Django template engine: a template written by a user must not be able to reach
objects, filters or tags (healthchecks' approach). The replace is one
pass over the template, so a value that itself contains ``$NAME`` (a job's failure reason, a
queue name) is inserted as it is and never expanded again.
"""

from __future__ import annotations

import json
import re


def fill_placeholders(template: str, *, values: dict[str, str]) -> str:
    """Replace every ``$NAME`` for the names in ``values`` (longest name first, so ``$RULE_KIND``
    is not read as ``$RULE`` followed by ``_KIND``); anything else is left as written."""
    if not values:
        return template
    names = sorted(values, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape("$" + name) for name in names))
    return pattern.sub(lambda m: values[m.group(0)[1:]], template)


def json_string_content(value: str) -> str:
    """``value`` escaped for the inside of a JSON string (no surrounding quotes), so that
    ``"text": "$SUBJECT"`` stays valid JSON whatever the subject holds."""
    return json.dumps(value, ensure_ascii=False)[1:-1]
