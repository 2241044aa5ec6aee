"""schemathesis hooks for Tests/api/test_schemathesis.py (which names this file in
SCHEMATHESIS_HOOKS).

- The formats of docs/api/openapi.yaml that JSON Schema cannot bound by itself: names and
  reasons are limited in UTF-8 *bytes* (`x-maxBytes`), while `maxLength` counts characters.
  Valid values are drawn within the byte limit, so a schema-valid request is one the broker
  takes.
- `getState` of a user who is not in the channel is 400 `USER_NOT_PRESENT` (PROTOCOL §10: an
  op's own codes are 400); the schema cannot say who is present, so that one failure of
  `positive_data_acceptance` is dropped, and only for that code.
"""

import json

import schemathesis
from hypothesis import strategies as st

# Every character but controls (Cc: U+0000-U+001F, U+007F-U+009F) and lone surrogates (Cs),
# which JSON text cannot carry as UTF-8.
_NAME_CHARACTERS = st.characters(exclude_categories=("Cc", "Cs"))


def _within_bytes(minimum, maximum, alphabet):
    return st.text(alphabet, min_size=minimum, max_size=maximum).filter(
        lambda text: minimum <= len(text.encode("utf-8")) <= maximum)


schemathesis.openapi.format("rollcall-name", _within_bytes(1, 128, _NAME_CHARACTERS))
schemathesis.openapi.format("rollcall-prefix", _within_bytes(0, 128, _NAME_CHARACTERS))
schemathesis.openapi.format("close-reason", _within_bytes(0, 123, st.characters(exclude_categories=("Cs",))))


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if failure.code != "ST202" or case.operation.label != "POST /api/v1/getState" or response.status_code != 400:
        return True
    try:
        code = json.loads(response.content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return True
    return code != "USER_NOT_PRESENT"
