#!/usr/bin/env python3
"""Offline structure check of deploy/kubernetes (no cluster needed).

`kubectl apply --dry-run=client` asks the API server for its resource types
even in client mode, so without a cluster it cannot run; this checks what
recon relies on instead:

  check.py DIR   -> exit 0 and one "ok - ..." line per check, or 1

- every document parses, has apiVersion, kind and metadata.name;
- the ConfigMap holds a job file (JSON) with "partition": {"count": N};
- one CronJob per mode (t1, hot), each concurrencyPolicy: Forbid, an Indexed
  Job with completions = parallelism = N, the command passing
  --mode M and --partition "$JOB_COMPLETION_INDEX/N";
- the state volume mounted with subPathExpr p$(JOB_COMPLETION_INDEX)-of-N
  (one store per partition) from a claim defined here; the job's state and
  heartbeat paths lie under that mount;
- memory and cpu requests and limits set (requests <= limits);
- every dsn_env of the job comes from a Secret defined here (envFrom), and
  no DSN is written in the job file.
"""
import json
import re
import sys

import yaml

FAILS = []


def check(ok, what):
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        FAILS.append(what)


def mem_bytes(q):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 10**3, "M": 10**6, "G": 10**9}
    m = re.fullmatch(r"(\d+)([KMG]i?)?", str(q))
    return int(m.group(1)) * units.get(m.group(2) or "", 1) if m else None


def cpu_milli(q):
    q = str(q)
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def main(folder):
    kust = yaml.safe_load(open(f"{folder}/kustomization.yaml"))
    docs = []
    for f in kust["resources"]:
        for d in yaml.safe_load_all(open(f"{folder}/{f}")):
            if d is None:
                continue
            ok = all(k in d for k in ("apiVersion", "kind", "metadata")) and "name" in d["metadata"]
            check(ok, f"{f}: {d.get('kind')} {d.get('metadata', {}).get('name')} is well-formed")
            docs.append(d)
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
    cms = by_kind.get("ConfigMap", {})
    check(len(cms) == 1, "one ConfigMap holds the job file")
    (cm,) = cms.values()
    (fname, text), = cm["data"].items()
    job = json.loads(text)
    n = job.get("partition", {}).get("count")
    check(isinstance(n, int) and n >= 1, f"the job file {fname} says partition.count ({n})")
    dsn_envs = {s["dsn_env"] for s in (job["upstream"], job["local"]) if "dsn_env" in s}
    if "writer_dsn_env" in job.get("actions", {}):
        dsn_envs.add(job["actions"]["writer_dsn_env"])
    check(not re.search(r"://[^/]*:[^/]*@", text), "no DSN with a password in the job file")
    secrets = by_kind.get("Secret", {})
    claims = by_kind.get("PersistentVolumeClaim", {})
    modes = {}
    for name, cj in by_kind.get("CronJob", {}).items():
        spec = cj["spec"]
        jspec = spec["jobTemplate"]["spec"]
        pod = jspec["template"]["spec"]
        (c,) = [c for c in pod["containers"] if c["name"] == "recon"]
        cmd = " ".join(c.get("command", []) + c.get("args", []))
        mode = re.search(r"--mode (t1|hot)", cmd)
        mode = mode.group(1) if mode else None
        modes[mode] = name
        check(spec.get("concurrencyPolicy") == "Forbid", f"{name}: concurrencyPolicy Forbid")
        check(jspec.get("completionMode") == "Indexed", f"{name}: an Indexed Job")
        check(jspec.get("completions") == n and jspec.get("parallelism") == n,
              f"{name}: completions and parallelism = partition.count ({n})")
        check(f'--partition "$JOB_COMPLETION_INDEX/{n}"' in cmd,
              f"{name}: JOB_COMPLETION_INDEX -> --partition I/{n}")
        check(f"--job /etc/recon/{fname}" in cmd, f"{name}: runs the ConfigMap's job file")
        vols = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        state_dir = job["state"].rsplit("/", 1)[0]
        sm = mounts.get(state_dir)
        check(sm is not None and sm.get("subPathExpr") == f"p$(JOB_COMPLETION_INDEX)-of-{n}",
              f"{name}: {state_dir} is the partition's own directory (subPathExpr)")
        check(job.get("heartbeat", "").startswith(state_dir + "/"),
              f"{name}: the heartbeat lies in the partition's directory")
        claim = vols.get(sm["name"], {}).get("persistentVolumeClaim", {}).get("claimName") if sm else None
        check(claim in claims, f"{name}: the state claim '{claim}' is defined")
        cmv = [v for v in vols.values() if v.get("configMap", {}).get("name") == cm["metadata"]["name"]]
        check(len(cmv) == 1 and any(m["name"] == cmv[0]["name"] and p == "/etc/recon"
                                     for p, m in mounts.items()),
              f"{name}: the job file is mounted at /etc/recon")
        res = c.get("resources", {})
        req, lim = res.get("requests", {}), res.get("limits", {})
        check(all(k in req and k in lim for k in ("cpu", "memory")) and
              mem_bytes(req["memory"]) <= mem_bytes(lim["memory"]) and
              cpu_milli(req["cpu"]) <= cpu_milli(lim["cpu"]),
              f"{name}: cpu and memory requests <= limits")
        from_secret = set()
        for e in c.get("envFrom", []):
            s = secrets.get(e.get("secretRef", {}).get("name"))
            if s:
                from_secret |= set(s.get("stringData", {})) | set(s.get("data", {}))
        check(dsn_envs <= from_secret, f"{name}: {sorted(dsn_envs)} come from a Secret")
        check(pod.get("restartPolicy") == "Never", f"{name}: restartPolicy Never (the Job retries)")
    check(set(modes) == {"t1", "hot"}, f"one CronJob per mode: {sorted(k for k in modes if k)}")
    print(f"{len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
