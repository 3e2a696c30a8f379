"""The one-moment partition-log picture (``log_snapshot``) fits a notebook's column: its legend names every colour
and line under the offset axis, in rows across the figure, never beside the plot where a notebook cut its words off
(seen in JupyterLab with the file browser open: "transactional, committ", and in a one-row picture the LSO's entry
ran past the figure's foot)."""
from txnlab import Cluster, Producer
from widgets.log_strip import LogStrip
from widgets.snapshots import _AXIS_PX, log_snapshot


def _cluster():
    c = Cluster(brokers=3, seed=1)
    c.create_topic("orders", partitions=2, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("orders", value=b"v", partition=0)
    p.commit_transaction()
    c.run_until_idle()
    return c


def test_the_legend_stands_under_the_axis_and_the_picture_is_no_wider_than_the_live_strip():
    c = _cluster()
    for rows, positions in (([("orders", 0)], None), ([("orders", 0), ("orders", 1)], None),
                            ([("orders", 0)], {0: [(1, "read_committed position")]})):
        fig = log_snapshot(c, rows, title="t", positions=positions)
        lay = fig.layout
        assert lay.width <= LogStrip().width                    # as wide as the live strip, which fits the column
        assert lay.legend.orientation == "h" and lay.legend.x == 0.0 and lay.legend.yanchor == "top"
        plot_px = lay.height - lay.margin.t - lay.margin.b
        assert -lay.legend.y * plot_px >= _AXIS_PX               # under the axis's numbers and title
        names = [t.name for t in fig.data if t.showlegend is not False]
        assert "LSO (last stable offset)" in names and len(names) == 9
        rows_of_entries = -(-len(names) // 4)                    # four to a row across 980 px
        assert lay.margin.b >= _AXIS_PX + 21 * rows_of_entries   # and the figure's foot holds all of them
