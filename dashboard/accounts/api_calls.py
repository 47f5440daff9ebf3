"""The shape of a JSON API call that posts: authenticated (token or session + CSRF), POST only,
errors as JSON, and its body read as a mapping. Shared by every feature's API."""

from __future__ import annotations

from django.http import QueryDict
from django.views.decorators.http import require_POST

from dashboard.accounts.auth import api_auth, api_csrf
from dashboard.web.errors import InvalidInput, api_errors
from queues.safe_json import MAX_DEPTH, JsonTooDeep, NonFiniteNumber, strict_loads


def api_post(view):
    """POST only; bearer token or session (+CSRF); errors as JSON. The role is the action's
    own (checked by the view through the registry) or ``api_mutation``'s."""
    return api_auth(require_POST(api_csrf(api_errors(view))))  # 401 before 405: anonymous callers learn nothing


def body_params(request):
    """The POST body as a mapping: JSON objects as they are, forms as a QueryDict."""
    if request.content_type == "application/json":
        try:
            data = strict_loads(request.body or b"{}")
        except JsonTooDeep:
            raise InvalidInput(f"The body is nested more than {MAX_DEPTH} levels deep.") from None
        except NonFiniteNumber as exc:
            raise InvalidInput(f"The body holds {exc}, which is not a JSON number.") from None
        except ValueError:
            raise InvalidInput("The body is not valid JSON.") from None
        if not isinstance(data, dict):
            raise InvalidInput("The body must be a JSON object.")
        return data
    return request.POST if request.POST else QueryDict()
