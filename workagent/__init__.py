"""workagent package."""

from workagent import _lightimport

_lightimport.install()  # before any kubernetes_asyncio import: see the module
