"""kubesim learns from the truth: the same exchanges against kubesim and a real kube-apiserver.

Each test is a scripted scenario (:mod:`tests.kubesim.truth`) run at once
against a fresh kubesim and against the real control plane of this package
(``make realkube``'s v1.35 kube-apiserver and kube-controller-manager, one for
every scenario here: each uses names of its own), and the answers must be the
same: status codes, reasons, messages, warnings and bodies, once the values a
server makes up (uids, resourceVersions, timestamps) are masked. Where the two
legitimately differ, the scenario masks the value and says why in one line.
Every test carries the ``realkube`` mark.
"""
