//! A build as the comparisons see it: its PTX modules, parsed into kernels (normalised text,
//! instruction mix, numerics kinds) and, with ptxas, assembled (resources, SASS). Where a build's
//! PTX comes from is the caller's business (`gates::ptx::builds`).

use crate::mix::{mix, Mix};
use crate::normalize::normalize;
use crate::numerics::{kinds, Kinds};
use crate::parse::parse;
use crate::ptxas::{self, Resources};
use crate::{sass, Error};
use std::collections::BTreeMap;
use std::path::Path;

/// One build: one or more PTX modules (the reference has one per .cu file) for one arch.
#[derive(Debug, Clone)]
pub struct Build {
    /// How the build is named in output, such as a path, `snapshot NAME` or `reference .cu`.
    pub label: String,
    /// What made it, for the header, such as a manifest's toolchain or NVRTC's options.
    pub about: String,
    /// `(module name, PTX text)`.
    pub modules: Vec<(String, String)>,
}

/// One kernel of a build, as the comparisons see it.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    /// The module (index into [`Build::modules`]) that defines it.
    pub module: usize,
    pub normalized: String,
    pub mix: Mix,
    /// Its numerics-deciding instruction kinds (`numerics::kinds`).
    pub numerics: Kinds,
}

/// A build's kernels by name and its arch (every module's `.target`).
#[derive(Debug, Clone)]
pub struct Parsed {
    pub arch: String,
    pub kernels: BTreeMap<String, Kernel>,
}

impl Build {
    /// Parses every module. Fails on malformed PTX, on modules for different targets, and on a
    /// kernel defined twice.
    pub fn parse(&self) -> Result<Parsed, Error> {
        let mut arch: Option<String> = None;
        let mut kernels = BTreeMap::new();
        for (index, (name, ptx)) in self.modules.iter().enumerate() {
            let module = parse(ptx).map_err(|e| e.context(name))?;
            match &arch {
                Some(a) if a != module.target => {
                    return Err(Error::new(format!(
                        "{}: modules for different targets ({a} and {})",
                        self.label, module.target
                    )))
                }
                _ => arch = Some(module.target.to_string()),
            }
            for entry in &module.entries {
                let kernel = Kernel {
                    name: entry.name.to_string(),
                    module: index,
                    normalized: normalize(entry),
                    mix: mix(entry),
                    numerics: kinds(entry),
                };
                if let Some(other) = kernels.insert(entry.name.to_string(), kernel) {
                    return Err(Error::new(format!(
                        "{}: kernel `{}` is defined in both {} and {name}",
                        self.label, entry.name, self.modules[other.module].0
                    )));
                }
            }
        }
        Ok(Parsed {
            arch: arch.expect("parse refuses a module without .target"),
            kernels,
        })
    }
}

/// What ptxas (and cuobjdump) say about one kernel.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub resources: Resources,
    /// Normalised SASS, when asked for.
    pub sass: Option<String>,
}

/// Assembles every module of `build` for `arch` and, given cuobjdump, disassembles it.
pub fn assemble(
    build: &Build,
    arch: &str,
    ptxas_path: &Path,
    cuobjdump: Option<&Path>,
) -> Result<BTreeMap<String, Assembled>, Error> {
    let mut out = BTreeMap::new();
    for (name, ptx) in &build.modules {
        let label = format!("{} ({name})", build.label);
        let module = ptxas::assemble(ptxas_path, ptx, arch, &label)?;
        let mut listing = match cuobjdump {
            Some(tool) => sass::disassemble(tool, &module.cubin).map_err(|e| e.context(&label))?,
            None => BTreeMap::new(),
        };
        for resources in module.resources {
            let sass = listing.remove(&resources.name);
            if cuobjdump.is_some() && sass.is_none() {
                return Err(Error::new(format!(
                    "{label}: cuobjdump listed no SASS for kernel `{}`",
                    resources.name
                )));
            }
            out.insert(resources.name.clone(), Assembled { resources, sass });
        }
    }
    Ok(out)
}
