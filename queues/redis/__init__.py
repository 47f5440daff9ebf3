"""BullMQ on Redis: how the facets of a source (``queues.sources.facets``) are read and run on
a Redis connection. The classes here take a client and nothing else, so a single node, a
Sentinel-managed primary and (per slot) a Cluster can share them."""
