"""Measured, not only modeled: onnxruntime's profile of a graph, joined to GraphLab's node ids
(`runner`, `node_map`, `trace`), this machine measured as a target (`machine`), and the
measurement set beside the roofline's prediction (`compare`, `pass_latency`)."""
