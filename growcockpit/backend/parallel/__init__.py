"""Distribution: the process group, FSDP2 sharding, growth on shards, and the rank roster."""
