"""How the job reaches a private network (vxtrain.validation.network_rules): VPC peering refused
for H100 Mega, H200 and B200 machines, PSC-I's values, reserved ranges, NFS and Lustre mounts;
the same values written in ``extra:`` meet the same rules at their extra lines."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from vxtrain import api, model
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.validation import rules
from tests.validation.specs import E, W, changed

IMAGE = "us-docker.pkg.dev/p/train/bert:1"
NETWORK = "projects/123/global/networks/vpc"
A100 = {"machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}}
H200 = {"machine_type": "a3-ultragpu-8g", "accelerator": {"type": "NVIDIA_H200_141GB", "count": 8}}
B200 = {"machine_type": "a4-highgpu-8g", "accelerator": {"type": "NVIDIA_B200", "count": 8}}
MEGA = {"machine_type": "a3-megagpu-8g", "accelerator": {"type": "NVIDIA_H100_MEGA_80GB", "count": 8}}
H100 = {"machine_type": "a3-highgpu-8g", "accelerator": {"type": "NVIDIA_H100_80GB", "count": 8}}
BASE: dict[str, Any] = {"display_name": "t", "region": "us-central1", "defaults": {"image": IMAGE}, "chief": A100}
NFS = {"server": "10.0.0.2", "path": "/data", "mount_point": "data"}
LUSTRE = {"instance_ip": "10.0.0.3", "volume_handle": "vh", "filesystem": "fs", "mount_point": "lustre"}
PSC = {"network_attachment": "train-attachment"}
CODES = ("vpc-", "psc-", "dns-", "reserved-", "mount-")


def spec(**changes: Any) -> dict[str, Any]:
    return changed(BASE, **changes)


def diagnostics(data: dict[str, Any]) -> list[Diagnostic]:
    return rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))


def found(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((d.severity, d.code, d.path) for d in diagnostics(data) if d.code.startswith(CODES))


CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    # VPC peering: refused for H100 Mega, H200 and B200 (using-private-ip), PSC-I is the way
    ("peering-a100", spec(network=NETWORK), []),
    ("peering-h100", spec(network=NETWORK, chief=H100), []),
    ("peering-h200", spec(network=NETWORK, chief=H200), [E("vpc-peering-unsupported", "network")]),
    ("peering-b200", spec(network=NETWORK, chief=B200), [E("vpc-peering-unsupported", "network")]),
    ("peering-mega-workers", spec(network=NETWORK, workers={**MEGA, "replicas": 2}),
     [E("vpc-peering-unsupported", "network")]),
    ("peering-builtin-gpus-named-by-machine", spec(network=NETWORK) | {"chief": {"machine_type": "a3-ultragpu-8g"}},
     [E("vpc-peering-unsupported", "network")]),
    ("psc-on-b200", spec(psc_interface=PSC, chief=B200), []),
    ("psc-and-network", spec(psc_interface=PSC, network=NETWORK), [W("psc-and-peering", "psc_interface")]),
    # PSC-I's values
    ("psc-full-name", spec(psc_interface={"network_attachment": "projects/p/regions/us-central1/"
                                                              "networkAttachments/att"}), []),
    ("psc-other-region", spec(psc_interface={"network_attachment": "projects/p/regions/europe-west4/"
                                                                   "networkAttachments/att"}),
     [E("psc-attachment-region", "psc_interface.network_attachment")]),
    ("psc-bad-name", spec(psc_interface={"network_attachment": "Train_Attachment"}),
     [E("psc-network-attachment", "psc_interface.network_attachment")]),
    ("psc-subnetwork-path", spec(psc_interface={"network_attachment": "projects/p/regions/us-central1/"
                                                                      "subnetworks/s"}),
     [E("psc-network-attachment", "psc_interface.network_attachment")]),
    ("dns-domain-dot", spec(psc_interface={**PSC, "dns_peering": [
        {"domain": "corp.example.com.", "target_project": "p2", "target_network": "vpc"}]}), []),
    ("dns-domain-no-dot", spec(psc_interface={**PSC, "dns_peering": [
        {"domain": "corp.example.com", "target_project": "p2", "target_network": "vpc"}]}),
     [E("dns-peering-domain", "psc_interface.dns_peering[0].domain")]),
    # reserved ranges live in the peered network
    ("ranges-with-network", spec(network=NETWORK, reserved_ip_ranges=["r"]), []),
    ("ranges-without-network", spec(reserved_ip_ranges=["r"]),
     [W("reserved-ranges-without-network", "reserved_ip_ranges")]),
    ("ranges-named-by-cidr", spec(network=NETWORK, reserved_ip_ranges=["vertex-range", "10.8.0.0/16"]),
     [E("reserved-range-name", "reserved_ip_ranges[1]")]),
    # mounts
    ("nfs-with-psc", spec(psc_interface=PSC, chief={**A100, "nfs_mounts": [NFS]}), []),
    ("nfs-with-network", spec(network=NETWORK, chief={**A100, "nfs_mounts": [NFS]}), []),
    ("nfs-without-network", spec(chief={**A100, "nfs_mounts": [NFS]}),
     [E("mount-needs-network", "chief.nfs_mounts")]),
    ("lustre-without-network", spec(chief={**A100, "lustre_mounts": [LUSTRE]}),
     [E("mount-needs-network", "chief.lustre_mounts")]),
    ("nfs-in-defaults", spec(network=NETWORK, defaults={"image": IMAGE, "nfs_mounts": [{**NFS, "server": "nfs"}]},
                             workers={**A100, "replicas": 2}),
     [E("mount-address", "defaults.nfs_mounts[0].server")]),
    ("nfs-public-server", spec(network=NETWORK, chief={**A100, "nfs_mounts": [{**NFS, "server": "8.8.8.8"}]}),
     [E("mount-address", "chief.nfs_mounts[0].server")]),
    ("nfs-shared-space-with-psc", spec(psc_interface=PSC, chief={**A100, "nfs_mounts": [
        {**NFS, "server": "100.64.1.2"}]}),
     [E("mount-address", "chief.nfs_mounts[0].server")]),
    ("nfs-ipv6-private", spec(network=NETWORK, chief={**A100, "nfs_mounts": [{**NFS, "server": "fd00::2"}]}), []),
    ("lustre-hostname", spec(network=NETWORK, chief={**A100, "lustre_mounts": [{**LUSTRE, "instance_ip": "l.x"}]}),
     [E("mount-address", "chief.lustre_mounts[0].instance_ip")]),
    ("mount-point-path", spec(network=NETWORK, chief={**A100, "nfs_mounts": [{**NFS, "mount_point": "/mnt/d"}]}),
     [E("mount-point", "chief.nfs_mounts[0].mount_point")]),
    ("mount-point-dotdot", spec(network=NETWORK, chief={**A100, "nfs_mounts": [{**NFS, "mount_point": ".."}]}),
     [E("mount-point", "chief.nfs_mounts[0].mount_point")]),
    ("mount-point-twice", spec(network=NETWORK, chief={**A100, "nfs_mounts": [NFS, {**NFS, "path": "/other"}]}),
     [E("mount-point", "chief.nfs_mounts[1].mount_point")]),
    ("same-name-nfs-and-lustre", spec(network=NETWORK, chief={**A100, "nfs_mounts": [NFS],
                                                              "lustre_mounts": [{**LUSTRE, "mount_point": "data"}]}),
     []),  # /mnt/nfs/data and /mnt/lustre/data
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_network_rules(data: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert found(data) == sorted(expected)


def test_peering_error_names_the_pools_and_psc_i_as_the_fix() -> None:
    data = spec(network=NETWORK, chief=B200, workers={**H200, "replicas": 2})
    diags = rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))
    (d,) = [d for d in diags if d.code == "vpc-peering-unsupported"]
    assert "chief (NVIDIA_B200 on a4-highgpu-8g), workers (NVIDIA_H200_141GB on a3-ultragpu-8g)" in d.message
    assert "doesn't support VPC Peering with H100-mega, H200 and B200" in d.message
    assert "psc_interface: {network_attachment: NAME}" in d.message


# --- with file, line and column; the same values in extra: -------------------------------------

def check(tmp_path: Path, text: str) -> tuple[list[Diagnostic], list[str]]:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(text))
    result = api.check_file(path, api.Options(environ={}))
    return result.diagnostics, path.read_text().splitlines()


def one(diags: list[Diagnostic], code: str) -> Diagnostic:
    (d,) = [d for d in diags if d.code == code]
    return d


def test_peering_is_refused_at_the_network_line(tmp_path: Path) -> None:
    diags, lines = check(tmp_path, f"""\
        display_name: t
        region: us-central1
        network: {NETWORK}
        chief:
          image: {IMAGE}
          machine_type: a4-highgpu-8g
          accelerator: {{type: NVIDIA_B200, count: 8}}
        """)
    d = one(diags, "vpc-peering-unsupported")
    assert (d.severity, d.path, d.line, d.column, d.file) == ("error", "network", 3, 1, str(tmp_path / "job.yaml"))


def test_network_set_in_extra_is_refused_at_the_extra_line(tmp_path: Path) -> None:
    diags, lines = check(tmp_path, f"""\
        display_name: t
        region: us-central1
        chief:
          image: {IMAGE}
          machine_type: a3-ultragpu-8g
          accelerator: {{type: NVIDIA_H200_141GB, count: 8}}
        extra:
          jobSpec:
            network: {NETWORK}
        """)
    d = one(diags, "vpc-peering-unsupported")
    assert (d.path, d.line, d.column) == ("extra.jobSpec.network", 9, 5)


def test_psc_and_mounts_in_extra_meet_the_native_rules(tmp_path: Path) -> None:
    diags, lines = check(tmp_path, f"""\
        display_name: t
        region: us-central1
        chief:
          image: {IMAGE}
          machine_type: n1-standard-8
        extra:
          jobSpec:
            pscInterfaceConfig:
              networkAttachment: projects/p/regions/europe-west4/networkAttachments/att
              dnsPeeringConfigs: [{{domain: corp.example.com, targetProject: p2, targetNetwork: vpc}}]
            workerPoolSpecs:
              - nfsMounts: [{{server: 8.8.8.8, path: /data, mountPoint: a/b}}]
        """)
    assert one(diags, "psc-attachment-region").line == 9
    dns = one(diags, "dns-peering-domain")
    assert dns.path == "extra.jobSpec.pscInterfaceConfig.dnsPeeringConfigs[0].domain" and dns.line == 10
    server = one(diags, "mount-address")
    assert server.path == "extra.jobSpec.workerPoolSpecs[0].nfsMounts[0].server" and server.line == 12
    point = one(diags, "mount-point")
    assert point.path == "extra.jobSpec.workerPoolSpecs[0].nfsMounts[0].mountPoint"
    assert lines[point.line - 1][point.column - 1:].startswith("mountPoint")


def test_mounts_in_extra_need_a_network_like_native_ones(tmp_path: Path) -> None:
    diags, _ = check(tmp_path, f"""\
        display_name: t
        region: us-central1
        chief: {{image: {IMAGE}, machine_type: n1-standard-8}}
        extra:
          jobSpec:
            workerPoolSpecs:
              - lustreMounts: [{{instanceIp: 10.0.0.3, volumeHandle: v, filesystem: f, mountPoint: l}}]
        """)
    d = one(diags, "mount-needs-network")
    assert (d.path, d.line, d.column) == ("extra.jobSpec.workerPoolSpecs[0].lustreMounts", 7, 9)


def test_a_clean_psc_job_validates_and_compiles(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        display_name: t
        region: us-central1
        psc_interface:
          network_attachment: att
          dns_peering: [{{domain: c.example., target_project: p, target_network: v}}]
        chief:
          image: {IMAGE}
          machine_type: a3-ultragpu-8g
          accelerator: {{type: NVIDIA_H200_141GB, count: 8}}
          nfs_mounts: [{{server: 10.1.2.3, path: /share, mount_point: share}}]
        """))
    result = api.check_file(path, api.Options(environ={}))
    assert [d for d in result.diagnostics if d.severity == "error"] == []
    assert result.custom_job is not None
    spec = result.custom_job["jobSpec"]
    assert spec["pscInterfaceConfig"] == {"networkAttachment": "att", "dnsPeeringConfigs": [
        {"domain": "c.example.", "targetProject": "p", "targetNetwork": "v"}]}
    assert spec["workerPoolSpecs"][0]["nfsMounts"] == [
        {"server": "10.1.2.3", "path": "/share", "mountPoint": "share"}]


@pytest.mark.parametrize(("via", "reason"), [
    ({"psc_interface": PSC}, "cannot reach over its Private Service Connect interface"),
    ({"network": NETWORK}, "not one of the private (RFC 1918) ranges")])
def test_an_nfs_server_in_the_shared_address_space_is_not_called_public(via: dict[str, Any], reason: str) -> None:
    """100.64.0.0/10 (RFC 6598) is neither private nor public: the message says what it is."""
    data = spec(**via, chief={**A100, "nfs_mounts": [{**NFS, "server": "100.127.0.9"}]})
    (d,) = [d for d in diagnostics(data) if d.code == "mount-address"]
    assert "public" not in d.message.replace("not a public address", "")
    assert "100.64.0.0/10" in d.message and "shared address space" in d.message and reason in d.message
    public = spec(**via, chief={**A100, "nfs_mounts": [{**NFS, "server": "100.128.0.9"}]})  # just past the range
    (p,) = [d for d in diagnostics(public) if d.code == "mount-address"]
    assert "is a public address" in p.message
