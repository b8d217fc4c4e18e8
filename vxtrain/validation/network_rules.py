"""How the job reaches a private network: VPC peering (``network``, ``reserved_ip_ranges``) or a
Private Service Connect interface (``psc_interface``), and the file systems it mounts over it
(``nfs_mounts``, ``lustre_mounts``).

Sources: using-private-ip (PEERING_DOC: "Vertex AI Training doesn't support VPC Peering with
H100-mega, H200 and B200 accelerators. A network attachment with PSC-I can be used as an
alternative for VPC Peering."; catalog ``vpc_peering.csv``), psc-i-egress (PSC_DOC), the
train-nfs-share page (NFS_DOC: the server "must be a private address in your VPC", the path
"an absolute path that starts with /", the mount point "a valid UNIX directory name", and a
network to reach it), and the protos' own field docs (custom_job.proto, service_networking.proto,
machine_resources.proto). Values ``extra:`` sets arrive on these keys (formats.gcloud.as_sent).

An NFS server in 100.64.0.0/10 is not a public address: it is RFC 6598's shared address space
(SHARED_SPACE_DOC), which Python's ``ipaddress`` counts as neither private nor global. It is
refused as before ("must be a private address in your VPC"), and the message says why: over a
PSC interface, Vertex AI's side of the connection does not route that range to the consumer's
network (unverified: reported by a user audit, issue 34; no Google page found states it), and
for VPC peering it is not one of the RFC 1918 private ranges the NFS page asks for.
"""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Sequence

from vxtrain.catalog import networking
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import Job, Pool, written_at
from vxtrain.validation._common import pool_accelerator

PEERING_DOC = ("https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/"
               "using-private-ip")
PSC_DOC = "https://cloud.google.com/vertex-ai/docs/training/psc-i-egress"
NFS_DOC = "https://cloud.google.com/vertex-ai/docs/training/train-nfs-share"
#: RFC 6598: 100.64.0.0/10, "Shared Address Space" (carrier-grade NAT), neither private nor public.
SHARED_SPACE_DOC = "https://www.rfc-editor.org/rfc/rfc6598"
SHARED_SPACE = "100.64.0.0/10"
#: A Compute Engine resource name (RFC 1035): a network attachment's own name.
_NAME = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
# Patterns, not compiled ones: ``re`` compiles and caches them on first use, off validate's start.
_ATTACHMENT = rf"(?:projects/([^/]+)/regions/([^/]+)/networkAttachments/)?({_NAME})"
_MOUNT_POINT = r"[^/\0]+"


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """VPC peering where Vertex AI refuses it, PSC-I's values, reserved ranges and mounts."""
    yield from _peering(job, native)
    yield from _psc(job, native)
    yield from _reserved_ranges(job, native)
    for pool in job.ordered_pools():
        yield from _mounts(job, pool, native)


# --- VPC peering -------------------------------------------------------------------------------

def _peering(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    if job.network is None:
        return
    refused = [(pool, acc) for pool in job.ordered_pools()
               for acc in [pool_accelerator(pool)[0]] if acc and networking.vpc_peering_refused(acc)]
    if refused:
        pools = ", ".join(f"{pool.role} ({acc} on {pool.machine_type})" for pool, acc in refused)
        yield error("vpc-peering-unsupported", f"network {job.network!r} peers the job with a VPC, which Vertex AI "
                    f"does not do for {pools}: \"Vertex AI Training doesn't support VPC Peering with H100-mega, "
                    f"H200 and B200 accelerators\" ({PEERING_DOC}); use a Private Service Connect interface "
                    "instead: psc_interface: {network_attachment: NAME} (a network attachment in the job's "
                    f"region, {PSC_DOC}) in place of network", **native.where(("network",)))
    if job.psc_interface is not None:
        yield warning("psc-and-peering", "network (VPC peering) and psc_interface (PSC-I) are both set: Vertex AI "
                      f"documents PSC-I as \"an alternative for VPC Peering\" ({PEERING_DOC}); whether a job may "
                      "use both is unverified: keep the one the job needs", **native.where(("psc_interface",)))


# --- Private Service Connect interface ----------------------------------------------------------

def _psc(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    psc = job.psc_interface
    if psc is None:
        return
    attachment = psc.network_attachment
    if attachment is not None:
        yield from _attachment(job, attachment, native)
    for i, peering in enumerate(psc.dns_peering):
        # DnsPeeringConfig.domain: "The DNS name suffix of the zone being peered to, e.g.,
        # "my-internal-domain.corp.". Must end with a dot." (service_networking.proto)
        if peering.domain is not None and not peering.domain.endswith("."):
            yield error("dns-peering-domain", f"psc_interface.dns_peering[{i}].domain {peering.domain!r} must end "
                        f"with a dot (DnsPeeringConfig: \"Must end with a dot.\"): write {peering.domain + '.'!r}",
                        **native.where(("psc_interface", "dns_peering", i, "domain")))


def _attachment(job: Job, attachment: str, native: NativeSpec) -> Iterator[Diagnostic]:
    where = native.where(("psc_interface", "network_attachment"))
    match = re.fullmatch(_ATTACHMENT, attachment)
    if match is None:
        yield error("psc-network-attachment", f"psc_interface.network_attachment {attachment!r} is not a network "
                    "attachment: give its name (lowercase letters, digits and hyphens, at most 63 characters) or "
                    f"projects/PROJECT/regions/REGION/networkAttachments/NAME ({PSC_DOC})", **where)
        return
    region = match.group(2)
    # PscInterfaceConfig.networkAttachment: "the Compute Engine network attachment to attach to the
    # resource within the region and user project" (service_networking.proto).
    if region is not None and job.region is not None and region != job.region:
        yield error("psc-attachment-region", f"psc_interface.network_attachment is in region {region!r} but the "
                    f"job runs in {job.region!r}: the attachment must be \"within the region and user project\" "
                    f"of the job ({PSC_DOC}); use an attachment in {job.region}", **where)


# --- reserved IP ranges ------------------------------------------------------------------------------

def _reserved_ranges(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    # reservedIpRanges: "A list of names for the reserved ip ranges under the VPC network that can be
    # used for this job" (custom_job.proto): ranges of the peered network, so nothing without one.
    # Names (the allocated ranges' own, RFC 1035), not CIDRs: a CIDR is the likely mistake.
    for i, name in enumerate(job.reserved_ip_ranges):
        if not re.fullmatch(_NAME, name):
            yield error("reserved-range-name", f"reserved_ip_ranges[{i}] {name!r} is not the name of a reserved "
                        "range: the field takes the names of ranges allocated for private services access "
                        "(lowercase letters, digits and hyphens; `gcloud compute addresses list --global "
                        "--filter=purpose=VPC_PEERING` lists them), not CIDR blocks "
                        f"(CustomJobSpec.reservedIpRanges, {PEERING_DOC})",
                        **native.where(("reserved_ip_ranges", i)))
    if job.reserved_ip_ranges and job.network is None:
        yield warning("reserved-ranges-without-network", "reserved_ip_ranges names ranges \"under the VPC "
                      "network\" the job is peered with (CustomJobSpec.reservedIpRanges), but network is not set: "
                      f"they have no effect; set network or leave them out ({PEERING_DOC})",
                      **native.where(("reserved_ip_ranges",)))


# --- NFS and Lustre mounts ----------------------------------------------------------------------------

def _mounts(job: Job, pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    if not pool.nfs_mounts and not pool.lustre_mounts:
        return
    if job.network is None and job.psc_interface is None:
        key = "nfs_mounts" if pool.nfs_mounts else "lustre_mounts"
        where = native.where(_at(native, pool, key))
        yield error("mount-needs-network", f"{where['path']} mounts a file system of your VPC, but the job has "
                    "no network to reach it: a job that mounts an NFS share must name \"the network for Vertex AI "
                    f"to access\" ({NFS_DOC}); add psc_interface: {{network_attachment: NAME}} (recommended) or "
                    "network: projects/NUMBER/global/networks/NAME", **where)
    via = "psc" if job.psc_interface is not None else "peering"
    for i, nfs in enumerate(pool.nfs_mounts):
        yield from _ip(nfs.server, "server", "nfs_mounts", i, pool, native, private=via)
    for i, lustre in enumerate(pool.lustre_mounts):
        yield from _ip(lustre.instance_ip, "instance_ip", "lustre_mounts", i, pool, native, private=None)
    yield from _mount_points([m.mount_point for m in pool.nfs_mounts], "nfs_mounts", "/mnt/nfs", pool, native)
    yield from _mount_points([m.mount_point for m in pool.lustre_mounts], "lustre_mounts", "/mnt/lustre",
                             pool, native)


def _ip(value: str | None, field: str, key: str, i: int, pool: Pool, native: NativeSpec, *,
        private: str | None) -> Iterator[Diagnostic]:
    """An IP address field; ``private``: how the job reaches it (``psc``, ``peering``) when it
    must be a private address (an NFS server), None when any address is taken."""
    if value is None:
        return
    where = native.where(_at(native, pool, key, i, field))
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        yield error("mount-address", f"{where['path']} {value!r} is not an IP address: the field "
                    f"takes the server's IP address (machine_resources.proto), not a host name ({NFS_DOC})",
                    **where)
        return
    if private is None or address.is_private:
        return
    if address in ipaddress.ip_network(SHARED_SPACE):
        how = ("which the job cannot reach over its Private Service Connect interface" if private == "psc" else
               "not one of the private (RFC 1918) ranges")
        yield error("mount-address", f"{where['path']} {value!r} is in {SHARED_SPACE}, the shared address space of "
                    f"carrier-grade NAT, not a public address ({SHARED_SPACE_DOC}), {how}: the NFS server \"must be a private address in "
                    f"your VPC\" ({NFS_DOC}); give the server's address in a 10.0.0.0/8, 172.16.0.0/12 or "
                    "192.168.0.0/16 subnet", **where)
        return
    yield error("mount-address", f"{where['path']} {value!r} is a public address: the NFS "
                f"server \"must be a private address in your VPC\" ({NFS_DOC})", **where)


def _mount_points(points: Sequence[str | None], key: str, under: str, pool: Pool,
                  native: NativeSpec) -> Iterator[Diagnostic]:
    seen: set[str] = set()
    for i, point in enumerate(points):
        if point is None:
            continue
        where = native.where(_at(native, pool, key, i, "mount_point"))
        if not re.fullmatch(_MOUNT_POINT, point) or point in (".", ".."):
            yield error("mount-point", f"{where['path']} {point!r} must be a directory name "
                        f"(\"a valid UNIX directory name\", mounted at {under}/<mount_point>: {NFS_DOC}), "
                        f"without slashes; e.g. {point.strip('/').replace('/', '-') or 'data'!r}", **where)
        elif point in seen:
            yield error("mount-point", f"{where['path']} {point!r} is used twice in the {pool.role} pool: "
                        f"two file systems cannot be mounted at {under}/{point}; give each its own", **where)
        seen.add(point)


def _at(native: NativeSpec, pool: Pool, key: str, *tail: str | int) -> KeyPath:
    return written_at(native.data, pool.role, key, *tail) or (pool.role, key, *tail)
