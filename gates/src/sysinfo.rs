//! Clocks and temperature, read at a gate's entry and exit: a timing taken while the clocks were
//! low or the card hot is visible as such.

use std::process::Command;

/// One `nvidia-smi` reading of device `ordinal`, or why there is none.
pub fn clocks_and_temperature(ordinal: usize) -> String {
    let out = Command::new("nvidia-smi")
        .args([
            "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw",
            "--format=csv,noheader",
            "-i",
            &ordinal.to_string(),
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            let f: Vec<&str> = text.trim().split(',').map(str::trim).collect();
            match f.as_slice() {
                [sm, mem, temp, power] => {
                    format!("sm clock {sm}, memory clock {mem}, {temp} C, {power}")
                }
                _ => text.trim().to_string(),
            }
        }
        Ok(o) => format!(
            "unavailable (nvidia-smi: {})",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("unavailable (nvidia-smi: {e})"),
    }
}
