"""Cluster metadata behind one narrow interface: topics, partitions, leaders, brokers, configs, ids.

`store.MetadataStore` is what handlers and the partition layer see; `standalone.StandaloneMetadataStore`
keeps it in a local JSON file, and the cluster implementation (control plane) plugs in the same way.
"""
