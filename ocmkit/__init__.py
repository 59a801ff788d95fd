"""What the work agent and the hub controller are both built on.

The asyncio controller runtime (informers, work queues, controllers, the
manager, leader election, probes, metrics, logging), the Kubernetes client,
the CloudEvents codec of OCM's work transport, Go value encoding, durations,
serving (TLS), and the programs' shared flags and start-up. It imports
neither :mod:`workagent` nor :mod:`hubcontroller`.
"""
