"""Where the agent's ManifestWorks come from: the hub API server or CloudEvents.

``--workload-source-driver`` picks one: ``kube`` (:mod:`.kube`) reads the hub
API server; ``grpc`` (:mod:`.grpcdriver`) and ``mqtt`` (:mod:`.mqttdriver`)
receive CloudEvents into a local store (:mod:`.store`, :mod:`.cloudevents`).
Every source feeds the same works informer and takes the same status and
finalizer patches, so the controllers cannot tell them apart.
"""

from __future__ import annotations

from workagent.settings import AgentSettings
from workagent.sources.base import WorkClient, WorkSource
from workagent.sources.kube import kube_work_source, kubeconfig_server

__all__ = [
    "WorkClient",
    "WorkSource",
    "build_work_source",
    "kubeconfig_server",
]


async def build_work_source(settings: AgentSettings) -> WorkSource:
    """The source ``--workload-source-driver`` names (raises ValueError/KubeConfigError)."""
    driver = settings.workload_source_driver
    if driver == "kube":
        return await kube_work_source(settings)
    # Imported on use: the kube driver does not load gRPC or MQTT.
    from workagent.sources.cloudevents import CloudEventsWorkSource  # noqa: PLC0415
    from workagent.sources.transport import Transport  # noqa: PLC0415

    transport: Transport
    if driver == "grpc":
        from workagent.sources.grpcdriver import GrpcTransport  # noqa: PLC0415

        transport = GrpcTransport(settings.hub_kubeconfig, settings.cluster_name)
    elif driver == "mqtt":
        from workagent.sources.mqttdriver import MqttTransport  # noqa: PLC0415

        mqtt = MqttTransport(
            settings.hub_kubeconfig, settings.cluster_name, settings.cloudevents_client_id
        )
        await mqtt.check()
        transport = mqtt
    else:
        raise ValueError(f"--workload-source-driver={driver} is not supported")
    source = CloudEventsWorkSource(
        transport,
        cluster=settings.cluster_name,
        client_id=settings.cloudevents_client_id,
        reconnect_initial=settings.cloudevents_reconnect_seconds,
    )
    return WorkSource(
        driver=driver,
        client=source.store,
        endpoint=transport.endpoint,
        service=source,
    )
