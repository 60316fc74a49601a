"""``python -m trainhub.schedules.process``: the local scheduler's process
(trainhub.schedules.local), on the job service the settings describe."""

from __future__ import annotations

import logging
import sys

from trainhub import settings
from trainhub.backends.factory import make_service
from trainhub.schedules.local import serve


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    return serve(settings.home(), make_service)


if __name__ == "__main__":
    sys.exit(main())
