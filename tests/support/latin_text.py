"""Latin text left on a page read in Arabic, outside what marks user data (the Arabic tour and the
pages tested on their own in Arabic)."""

from __future__ import annotations

import re

# Names that are not translated (products, formats, standards), written in Latin letters in
# Arabic text too; and identifiers from code and configuration (camelCase or dotted option and
# method names, Redis settings, acronyms, percentiles), which no translation may change.
PROPER_NOUNS = (
    "Queuewatch",
    "BullMQ",
    "Redis",
    "Node.js",
    "Python",
    "Prometheus",
    "JSON Lines",
    "JSON Schema",
    "JSONL",
    "JSON",
    "CSV",
    "Lua",
    "cron",
    "glob",
    "Slack",
    "Alertmanager",
    "PagerDuty",
    "maxmemory-policy",
    "maxmemory",
    "noeviction",
)
IDENTIFIER = (
    r"\b[a-z]+[A-Z]\w*|\b\w+(?:\.\w+)+|\b[a-z]+_\w+|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{2,}\b"
    r"|\bp\d\d\b|\bRFC \d+|\b[a-z]+-\*"
)
# (camelCase, dotted, snake_case, ENV_NAMES, ACRONYMS, percentiles, RFC numbers, a glob like orders-*)

# Visible text nodes with a Latin letter, outside what marks user data; each as the element's
# tag and classes and its text, so a failure says where it is.
LATIN_TEXT = """() => {
  const userData = 'bdi, [dir=ltr], code, pre, kbd, samp, script, style, template, noscript, input, textarea, option';
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const text = node.textContent.replace(/\\s+/g, ' ').trim();
    const el = node.parentElement;
    if (!text || !/[A-Za-z]/.test(text) || !el || el.closest(userData)) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (box.width * box.height <= 1 || style.visibility === 'hidden' || !el.getClientRects().length) continue;
    found.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : '')
               + ': ' + text.slice(0, 160));
  }
  return found;
}"""


def latin_outside_user_data(found: list[str]) -> list[str]:
    nouns = re.compile("|".join([*(re.escape(n) for n in PROPER_NOUNS), IDENTIFIER]))
    return [line for line in found if re.search("[A-Za-z]", nouns.sub("", line.split(": ", 1)[1]))]
