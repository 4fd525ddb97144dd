"""The host pool: `guestbench worker` on each host takes the jobs queued for it, one at a
time, from a procrastinate queue in the store's PostgreSQL; `guestbench submit` queues a
plan as one campaign per chosen host (a campaign group); `guestbench hosts` lists them."""
