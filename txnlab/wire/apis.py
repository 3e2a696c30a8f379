"""The table of the door's APIs: api key -> (decode, encode), one pair per Kafka API (see ``apis_*``)."""
from __future__ import annotations

from . import apis_admin as a
from . import apis_data as d
from . import apis_group as g
from . import apis_txn as t

TABLE = {
    0: (d.decode_produce, d.encode_produce),
    1: (d.decode_fetch, d.encode_fetch),
    2: (d.decode_list_offsets, d.encode_list_offsets),
    3: (d.decode_metadata, d.encode_metadata),
    8: (g.decode_offset_commit, g.encode_offset_commit),
    9: (g.decode_offset_fetch, g.encode_offset_fetch),
    10: (d.decode_find_coordinator, d.encode_find_coordinator),
    11: (g.decode_join_group, g.encode_join_group),
    12: (g.decode_heartbeat, g.encode_heartbeat),
    13: (g.decode_leave_group, g.encode_leave_group),
    14: (g.decode_sync_group, g.encode_sync_group),
    18: (d.decode_api_versions, d.encode_api_versions),
    19: (d.decode_create_topics, d.encode_create_topics),
    20: (d.decode_delete_topics, d.encode_delete_topics),
    22: (d.decode_init_producer_id, d.encode_init_producer_id),
    23: (d.decode_offset_for_leader_epoch, d.encode_offset_for_leader_epoch),
    24: (t.decode_add_partitions_to_txn, t.encode_add_partitions_to_txn),
    25: (t.decode_add_offsets_to_txn, t.encode_add_offsets_to_txn),
    26: (t.decode_end_txn, t.encode_end_txn),
    28: (t.decode_txn_offset_commit, t.encode_txn_offset_commit),
    61: (a.decode_describe_producers, a.encode_describe_producers),
    65: (a.decode_describe_transactions, a.encode_describe_transactions),
    66: (a.decode_list_transactions, a.encode_list_transactions),
}
PRODUCER_APIS = {0, 22, 24, 25, 26, 28}
CONSUMER_APIS = {1, 8, 9, 11, 12, 13, 14, 23}
ADMIN_APIS = {19, 20, 61, 65, 66}
