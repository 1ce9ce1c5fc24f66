"""tasks keep the signed headers their POST carried: ``tasks.request_headers``

The protocol's signer makes a dispatch's headers (signature, timestamp, task id) at the
moment of the POST; the send path now keeps them on the task's row, as JSON by header name,
so a task's page shows the request as it was sent. The key is never among them. Tasks
stored before keep NULL: they did not keep their headers, and their pages say so. A
nullable column without a default: no row is rewritten, on either store.
"""

from __future__ import annotations

import sqlalchemy as sa

from palaestra.store.migrations.columns import adding_columns

revision = "0015"
down_revision = "0014"

upgrade, downgrade = adding_columns("tasks", sa.Column("request_headers", sa.JSON(), nullable=True))
