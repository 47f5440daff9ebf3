"""Links to a queue and to a job, built as ``reverse()`` would (the template tags of the same
names in ``dashboard/templatetags/qw.py`` are these functions)."""

from __future__ import annotations

import functools
from urllib.parse import quote, urlencode

from django.urls import reverse

from dashboard.web.converters import encode_job_id

# reverse() per row was most of the cost of a long list; the base of a queue's job URLs is
# built once and job ids are quoted exactly as reverse() would (RFC 3986 sub-delims kept).
_URL_SAFE = "!$&'()*+,;=" + "/~:@"


@functools.lru_cache(maxsize=4096)
def _job_url_base(queue) -> str:
    return reverse("job", args=[queue.connection, queue.prefix, queue.name, "_"])[:-1]


def job_url(queue, job_id):
    # The id through the route's converter first (dot segments, control characters: converters).
    return _job_url_base(queue) + quote(encode_job_id(str(job_id)), safe=_URL_SAFE)


def queue_url(queue, **params):
    url = reverse("queue", args=[queue.connection, queue.prefix, queue.name])
    params = {k: v for k, v in params.items() if v not in (None, "")}
    return url + ("?" + urlencode(params) if params else "")
