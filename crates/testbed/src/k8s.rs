//! A Kubernetes Job run as local processes: the manifests under `deploy/k8s/` read as the
//! cluster would (an Indexed Job's pods, their environment, `$(VAR)` expansion in args,
//! downward-API labels, ConfigMap and PersistentVolumeClaim volumes), each pod a process
//! of the tsload binary with exactly that environment and its volume mounts mapped to
//! local directories. No cluster is needed, so CI runs the path end to end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// One manifest, as JSON.
fn load(path: &Path) -> Result<Value, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{}: not YAML: {e}", path.display()))
}

/// What the simulation needs of a Job.
#[derive(Debug, Clone)]
pub struct Job {
    pub name: String,
    pub indexed: bool,
    pub completions: u32,
    pub parallelism: u32,
    pub backoff_limit: Option<u64>,
    /// The first container's args (the image's entrypoint is `tsload`).
    pub args: Vec<String>,
    pub env: Vec<EnvVar>,
    /// (volume name, mount path).
    pub mounts: Vec<(String, String)>,
    pub volumes: BTreeMap<String, Volume>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EnvVar {
    Value(String, String),
    /// `valueFrom.fieldRef.fieldPath`.
    Field(String, String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Volume {
    ConfigMap(String),
    Claim(String),
}

/// A ConfigMap's name and data.
#[derive(Debug, Clone)]
pub struct ConfigMap {
    pub name: String,
    pub data: BTreeMap<String, String>,
}

fn text(v: &Value, what: &str, path: &Path) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{}: {what} is not a string", path.display()))
}

impl Job {
    pub fn load(path: &Path) -> Result<Job, String> {
        let v = load(path)?;
        if v["kind"] != "Job" {
            return Err(format!("{}: not a Job", path.display()));
        }
        let spec = &v["spec"];
        let pod = &spec["template"]["spec"];
        let container = &pod["containers"][0];
        let args = container["args"]
            .as_array()
            .ok_or_else(|| format!("{}: the container has no args", path.display()))?
            .iter()
            .map(|a| text(a, "an arg", path))
            .collect::<Result<_, _>>()?;
        let mut env = Vec::new();
        for e in container["env"].as_array().into_iter().flatten() {
            let name = text(&e["name"], "an env name", path)?;
            if let Some(value) = e.get("value") {
                env.push(EnvVar::Value(name, text(value, "an env value", path)?));
            } else if let Some(f) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                env.push(EnvVar::Field(name, f.to_string()));
            } else {
                return Err(format!(
                    "{}: env {name}: only value and fieldRef are simulated",
                    path.display()
                ));
            }
        }
        let mounts = container["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                Ok((
                    text(&m["name"], "a mount name", path)?,
                    text(&m["mountPath"], "a mountPath", path)?,
                ))
            })
            .collect::<Result<_, String>>()?;
        let mut volumes = BTreeMap::new();
        for vol in pod["volumes"].as_array().into_iter().flatten() {
            let name = text(&vol["name"], "a volume name", path)?;
            let volume = if let Some(cm) = vol["configMap"]["name"].as_str() {
                Volume::ConfigMap(cm.to_string())
            } else if let Some(c) = vol["persistentVolumeClaim"]["claimName"].as_str() {
                Volume::Claim(c.to_string())
            } else {
                return Err(format!(
                    "{}: volume {name}: only configMap and persistentVolumeClaim are simulated",
                    path.display()
                ));
            };
            volumes.insert(name, volume);
        }
        let count = |key: &str| spec[key].as_u64().map_or(1, |n| n as u32);
        Ok(Job {
            name: text(&v["metadata"]["name"], "metadata.name", path)?,
            indexed: spec["completionMode"] == "Indexed",
            completions: count("completions"),
            parallelism: count("parallelism"),
            backoff_limit: spec["backoffLimit"].as_u64(),
            args,
            env,
            mounts,
            volumes,
        })
    }

    /// The literal value of env var `name`, if the Job sets one.
    pub fn env_value(&self, name: &str) -> Option<&str> {
        self.env.iter().find_map(|e| match e {
            EnvVar::Value(n, v) if n == name => Some(v.as_str()),
            _ => None,
        })
    }
}

impl ConfigMap {
    pub fn load(path: &Path) -> Result<ConfigMap, String> {
        let v = load(path)?;
        if v["kind"] != "ConfigMap" {
            return Err(format!("{}: not a ConfigMap", path.display()));
        }
        let mut data = BTreeMap::new();
        for (k, val) in v["data"].as_object().into_iter().flatten() {
            data.insert(k.clone(), text(val, "a data value", path)?);
        }
        Ok(ConfigMap {
            name: text(&v["metadata"]["name"], "metadata.name", path)?,
            data,
        })
    }
}

/// Kubernetes' `$(VAR)` expansion: known variables replaced, `$$` an escaped `$`,
/// unknown references left as they are.
pub fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('(')
            && let Some(end) = body.find(')')
            && let Some(v) = env.get(&body[..end])
        {
            out.push_str(v);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Where the simulated cluster keeps its volumes, and what it substitutes.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Local root of the volumes: `configmaps/NAME/`, `claims/NAME/`.
    pub root: PathBuf,
    /// The tsload binary (the image's entrypoint).
    pub tsload: PathBuf,
    /// Env values replaced (e.g. a Service address by the loopback server's).
    pub env_overrides: BTreeMap<String, String>,
    pub configmaps: Vec<ConfigMap>,
}

impl Cluster {
    /// The local directory of a volume (a ConfigMap's data written out as files).
    fn volume_dir(&self, volume: &Volume) -> Result<PathBuf, String> {
        match volume {
            Volume::Claim(name) => {
                let d = self.root.join("claims").join(name);
                std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
                Ok(d)
            }
            Volume::ConfigMap(name) => {
                let cm = self
                    .configmaps
                    .iter()
                    .find(|c| &c.name == name)
                    .ok_or_else(|| format!("ConfigMap {name} is not among the manifests"))?;
                let d = self.root.join("configmaps").join(name);
                std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
                for (k, v) in &cm.data {
                    std::fs::write(d.join(k), v).map_err(|e| format!("{k}: {e}"))?;
                }
                Ok(d)
            }
        }
    }

    /// Runs every pod of `job` at once (as its parallelism allows) and waits for all.
    pub fn run(&self, job: &Job) -> Result<Vec<Output>, String> {
        if job.parallelism < job.completions {
            return Err(format!(
                "job {}: parallelism {} < completions {}: the simulation runs every pod at once",
                job.name, job.parallelism, job.completions
            ));
        }
        let mut mounts = Vec::new();
        for (volume, path) in &job.mounts {
            let v = job
                .volumes
                .get(volume)
                .ok_or_else(|| format!("job {}: mount of unknown volume {volume}", job.name))?;
            mounts.push((path.trim_end_matches('/').to_string(), self.volume_dir(v)?));
        }
        let uid = format!("sim-{}-{}", std::process::id(), job.name);
        let mut children = Vec::new();
        for index in 0..job.completions {
            let pod_name = format!("{}-{index}-sim", job.name);
            let mut env: BTreeMap<String, String> = BTreeMap::new();
            if job.indexed {
                env.insert("JOB_COMPLETION_INDEX".into(), index.to_string());
            }
            for e in &job.env {
                let (name, value) = match e {
                    EnvVar::Value(n, v) => (n.clone(), expand(v, &env)),
                    EnvVar::Field(n, f) => (n.clone(), field(f, job, &uid, &pod_name, index)?),
                };
                env.insert(name, value);
            }
            for (k, v) in &self.env_overrides {
                env.insert(k.clone(), v.clone());
            }
            let args: Vec<String> = job
                .args
                .iter()
                .map(|a| map_mounts(&expand(a, &env), &mounts))
                .collect();
            let child = Command::new(&self.tsload)
                .args(&args)
                .env_clear()
                .envs(&env)
                .current_dir(&self.root)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("starting {}: {e}", self.tsload.display()))?;
            children.push(child);
        }
        children
            .into_iter()
            .map(|c| c.wait_with_output().map_err(|e| e.to_string()))
            .collect()
    }
}

/// A downward-API field of pod `index` of `job`.
fn field(path: &str, job: &Job, uid: &str, pod: &str, index: u32) -> Result<String, String> {
    Ok(match path {
        "metadata.name" => pod.to_string(),
        "metadata.namespace" => "default".to_string(),
        "metadata.labels['batch.kubernetes.io/job-name']" | "metadata.labels['job-name']" => {
            job.name.clone()
        }
        "metadata.labels['batch.kubernetes.io/controller-uid']"
        | "metadata.labels['controller-uid']" => uid.to_string(),
        "metadata.annotations['batch.kubernetes.io/job-completion-index']" => index.to_string(),
        other => {
            return Err(format!(
                "job {}: fieldRef {other} is not simulated",
                job.name
            ));
        }
    })
}

/// An arg with a mount path (`/results/x`) pointed at the volume's local directory.
fn map_mounts(arg: &str, mounts: &[(String, PathBuf)]) -> String {
    for (path, local) in mounts {
        if arg == path {
            return local.display().to_string();
        }
        if let Some(rest) = arg.strip_prefix(path.as_str())
            && rest.starts_with('/')
        {
            return format!("{}{rest}", local.display());
        }
    }
    arg.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_follows_kubernetes() {
        let env: BTreeMap<String, String> =
            [("A".to_string(), "x".to_string()), ("B".into(), "y".into())].into();
        assert_eq!(expand("/r/$(A)/s-$(B).json", &env), "/r/x/s-y.json");
        assert_eq!(expand("$$(A) $(C) $", &env), "$(A) $(C) $");
    }

    #[test]
    fn mount_paths_map_on_whole_components() {
        let m = vec![("/results".to_string(), PathBuf::from("/tmp/c"))];
        assert_eq!(map_mounts("/results/j/a.json", &m), "/tmp/c/j/a.json");
        assert_eq!(map_mounts("/results", &m), "/tmp/c");
        assert_eq!(map_mounts("/resultsx/a", &m), "/resultsx/a");
        assert_eq!(map_mounts("run", &m), "run");
    }
}
