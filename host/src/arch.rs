//! Which SM target's module a device runs: the highest arch built that is not above the device's
//! compute capability (an sm_87 device runs sm_86's module, an sm_103 device sm_100's), or the
//! one `FERROCUDA_MODULE_ARCH` names, so that a newer GPU can run an older target's module (the
//! H200 running sm_80's, beside its own, gives the same bits).

use crate::error::Error;
use crate::gpu::Gpu;
use crate::module::FERROCUDA;

/// The environment variable that picks the module's arch over the device's own choice.
pub const MODULE_ARCH_VAR: &str = "FERROCUDA_MODULE_ARCH";

/// The number of an SM target (`sm_86` -> 86, `sm_100` -> 100, `sm_90a` -> 90), `None` for
/// anything else.
pub fn sm_number(arch: &str) -> Option<u32> {
    let n = arch.strip_prefix("sm_")?;
    n.strip_suffix('a').unwrap_or(n).parse().ok()
}

/// Whether `arch` is an arch-specific target (`sm_90a`): its module may hold instructions that
/// only that compute capability has (Hopper's `wgmma`), so it runs there and nowhere else.
pub fn arch_specific(arch: &str) -> bool {
    sm_number(arch).is_some() && arch.ends_with('a')
}

/// The highest of `archs` that runs on compute capability `major.minor`: not above it, or equal
/// to it for an arch-specific target, which is preferred to the plain target of its number.
pub fn fitting_arch<'a>(archs: &[&'a str], (major, minor): (i32, i32)) -> Option<&'a str> {
    let device = u32::try_from(major * 10 + minor).ok()?;
    let runs =
        |a: &str| sm_number(a).is_some_and(|n| n == device || (n < device && !arch_specific(a)));
    archs
        .iter()
        .copied()
        .filter(|a| runs(a))
        .max_by_key(|a| (sm_number(a), arch_specific(a)))
}

/// `arch` checked against the modules built (`archs`) and the device: one of them, and not above
/// the device's compute capability (the driver cannot load a newer target's PTX).
pub fn check_arch<'a>(archs: &[&'a str], arch: &str, gpu: &Gpu) -> Result<&'a str, Error> {
    let (major, minor) = gpu.info().compute_capability;
    let refuse = |why: String| Error::ModuleArch {
        arch: arch.to_string(),
        why,
    };
    let built = archs
        .iter()
        .copied()
        .find(|a| *a == arch)
        .ok_or_else(|| refuse(format!("the modules built are {}", archs.join(", "))))?;
    if fitting_arch(&[built], (major, minor)).is_none() {
        let (name, number) = (&gpu.info().name, sm_number(built).unwrap_or(0));
        let why = if arch_specific(built) {
            format!(
                "{name} is sm_{major}{minor}; an arch-specific module runs on sm_{number} alone"
            )
        } else {
            format!("{name} is sm_{major}{minor}, below it")
        };
        return Err(refuse(why));
    }
    Ok(built)
}

/// The arch of the module this device runs: `FERROCUDA_MODULE_ARCH` where set (checked as
/// [`check_arch`] does), else the highest of ferrocuda's modules that fits the device.
pub fn module_arch(gpu: &Gpu) -> Result<&'static str, Error> {
    let archs: Vec<&'static str> = FERROCUDA.modules.iter().map(|m| m.arch).collect();
    if let Ok(arch) = std::env::var(MODULE_ARCH_VAR) {
        return check_arch(&archs, arch.trim(), gpu);
    }
    let (major, minor) = gpu.info().compute_capability;
    fitting_arch(&archs, (major, minor)).ok_or_else(|| Error::ModuleArch {
        arch: format!("sm_{major}{minor}"),
        why: format!(
            "no module fits it; the modules built are {}",
            archs.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILT: [&str; 7] = [
        "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120",
    ];

    #[test]
    fn a_device_runs_the_highest_module_not_above_it() {
        for (cc, want) in [
            ((8, 0), Some("sm_80")),
            ((8, 6), Some("sm_86")),
            ((8, 7), Some("sm_86")),
            ((8, 9), Some("sm_89")),
            ((9, 0), Some("sm_90a")),
            ((10, 0), Some("sm_100")),
            ((10, 3), Some("sm_100")),
            ((12, 0), Some("sm_120")),
            ((12, 1), Some("sm_120")),
            ((7, 5), None),
        ] {
            assert_eq!(fitting_arch(&BUILT, cc), want, "compute capability {cc:?}");
        }
    }

    #[test]
    fn an_arch_specific_module_runs_on_its_own_compute_capability_alone() {
        assert_eq!(sm_number("sm_90a"), Some(90));
        assert!(arch_specific("sm_90a") && !arch_specific("sm_90") && !arch_specific("sm_a"));
        let plain = ["sm_80", "sm_90", "sm_100"];
        assert_eq!(fitting_arch(&plain, (9, 0)), Some("sm_90"));
        let hopper = ["sm_80", "sm_90a"];
        assert_eq!(fitting_arch(&hopper, (9, 0)), Some("sm_90a"));
        assert_eq!(fitting_arch(&hopper, (10, 0)), Some("sm_80"));
        assert_eq!(fitting_arch(&hopper, (8, 9)), Some("sm_80"));
    }
}
