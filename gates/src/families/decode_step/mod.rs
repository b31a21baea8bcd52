//! The decode-step gate: one transformer layer's decode path as chains of the project's kernels,
//! each chain one CUDA graph, launched plainly or as programmatic dependents, with q/k/v merged
//! into one GEMV over their concatenated rows and gate/up into one GEMV (then swiglu and the
//! quantization in one launch) or one GLU launch, or not; each kernel of the chain alone; and the
//! same layer's GEMMs through cuBLAS (bf16) and cuBLASLt (FP8).

mod chart;
mod layer;
mod peers;
mod summary;

use crate::harness::chart::{Figure, Run};
use crate::harness::output::Output;
use crate::harness::run::Report;
use crate::harness::{
    ArmSpec, CaseTiming, Check, Family, Footprint, Group, Label, On, Runs, Side, TimingMode,
    ValueClass,
};
use host::{CudaGraph, Error, Gpu};
use kernels_gpu::gemv::Format;
use layer::{Body, Dims, Fuse, Op};
use peers::{PeerLibs, PeerSet};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

/// What a step runs: a dense layer in one weight format, or the MLA attention chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Layer {
    #[serde(rename = "q8_0")]
    Q8_0,
    #[serde(rename = "q8_0-planar")]
    Q8_0Planar,
    #[serde(rename = "e4m3")]
    E4m3,
    #[serde(rename = "e4m3-b128")]
    E4m3B128,
    #[serde(rename = "mla")]
    Mla,
}

impl Layer {
    const ALL: [Layer; 5] = [
        Layer::Q8_0,
        Layer::Q8_0Planar,
        Layer::E4m3,
        Layer::E4m3B128,
        Layer::Mla,
    ];

    fn label(self) -> &'static str {
        match self {
            Layer::Q8_0 => "q8_0",
            Layer::Q8_0Planar => "q8_0-planar",
            Layer::E4m3 => "e4m3",
            Layer::E4m3B128 => "e4m3-b128",
            Layer::Mla => "mla",
        }
    }

    /// The dense layer's weight format (`None` for the MLA chain).
    fn format(self) -> Option<Format> {
        match self {
            Layer::Q8_0 => Some(Format::Q8_0),
            Layer::Q8_0Planar => Some(Format::Q8_0Planar),
            Layer::E4m3 => Some(Format::E4m3),
            Layer::E4m3B128 => Some(Format::E4m3B128),
            Layer::Mla => None,
        }
    }
}

/// One case: a layer, its activation rows (tokens, `t_q` for MLA) and its sizes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Shape {
    pub layer: Layer,
    pub m: usize,
    pub dims: Dims,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} m={}", self.layer.label(), self.m)?;
        if self.dims != Dims::of(self.layer) {
            write!(f, " small")?;
        }
        Ok(())
    }
}

/// The activation rows every layer is stepped at by default; `--shapes` takes any m from 1 to
/// [`M_MAX`].
const MS: [usize; 4] = [1, 2, 4, 8];
/// The most activation rows a step takes: the GEMVs' largest stamped entry, which is the MLA
/// chain's most tokens too.
const M_MAX: usize = {
    let m = kernels_gpu::gemv::BATCHES[kernels_gpu::gemv::BATCHES.len() - 1];
    assert!(m == kernels_gpu::mla::gemv::MAX_T);
    m as usize
};

/// Which of a step's launches are programmatic dependents of the launch before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pdl {
    Off,
    All,
    /// The GEMVs alone, each after a small kernel: their blocks are placed while it runs.
    Gemvs,
    /// The small kernels alone (norms, quantizations, swiglu), each after a GEMV: its block is
    /// placed while the GEMV drains and starts as the GEMV's writes are flushed, where a plain
    /// launch would start it after the GEMV's completion; the GEMVs keep a plain launch's
    /// placement.
    Small,
}

impl Pdl {
    fn applies(self, op: Op, shape: Shape) -> bool {
        match self {
            Pdl::Off => false,
            Pdl::All => true,
            Pdl::Gemvs => op.is_gemv(shape),
            Pdl::Small => !op.is_gemv(shape),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Pdl::Off => "",
            Pdl::All => " pdl",
            Pdl::Gemvs => " pdl gemvs",
            Pdl::Small => " pdl small",
        }
    }
}

/// What one call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arm {
    /// The whole step, one graph: `pdl` says which launches are programmatic dependents of the
    /// one before, `fuse` which launches are merged into one.
    Step { pdl: Pdl, fuse: Fuse },
    /// The step's kernels one at a time, the device synchronised after each (checked only).
    OneByOne,
    /// The step's GEMVs alone, one graph, on the activations the step left: what the step's
    /// other kernels add to it.
    Gemvs { fuse: Fuse },
    /// One kernel of the step alone, as a graph of its one launch.
    Solo(Op),
    /// The dense layer's seven GEMMs through cuBLAS, bf16 weights and activations.
    Bf16,
    /// The same through cuBLASLt, e4m3 weights and activations (16 columns, zero-padded).
    Fp8,
}

impl Label for Arm {
    fn label(&self) -> String {
        match self {
            Arm::Step { pdl, fuse } => format!("step{}{}", fuse.label(), pdl.label()),
            Arm::OneByOne => "one by one".into(),
            Arm::Gemvs { fuse } => format!("gemvs only{}", fuse.label()),
            Arm::Solo(op) => format!("  {}", op.label()),
            Arm::Bf16 => "cublas bf16 gemms".into(),
            Arm::Fp8 => "cublaslt fp8 gemms".into(),
        }
    }
}

/// The step arms, in the order the tables list them.
const STEPS: [Arm; 8] = [
    Arm::Step {
        pdl: Pdl::Off,
        fuse: Fuse::None,
    },
    Arm::Step {
        pdl: Pdl::All,
        fuse: Fuse::None,
    },
    Arm::Step {
        pdl: Pdl::Off,
        fuse: Fuse::Merged,
    },
    Arm::Step {
        pdl: Pdl::All,
        fuse: Fuse::Merged,
    },
    Arm::Step {
        pdl: Pdl::Gemvs,
        fuse: Fuse::Merged,
    },
    Arm::Step {
        pdl: Pdl::Small,
        fuse: Fuse::Merged,
    },
    Arm::Step {
        pdl: Pdl::Off,
        fuse: Fuse::Glu,
    },
    Arm::Step {
        pdl: Pdl::All,
        fuse: Fuse::Glu,
    },
];

/// The step arms of `shape`, each with what it merges: the MLA chain has nothing to merge.
fn steps(shape: Shape) -> impl Iterator<Item = (Arm, Fuse)> {
    STEPS.into_iter().filter_map(move |arm| match arm {
        Arm::Step { fuse, pdl }
            if shape.layer != Layer::Mla
                || fuse == Fuse::None && matches!(pdl, Pdl::Off | Pdl::All) =>
        {
            Some((arm, fuse))
        }
        _ => None,
    })
}

/// A case's buffers: the layer's, each arm's graph once captured on them, and the peers'.
pub struct Set {
    shape: Shape,
    body: Body,
    graphs: HashMap<(Arm, Side), CudaGraph>,
    peer: Option<PeerSet>,
}

pub struct DecodeStep {
    peers: RefCell<PeerLibs>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

/// `LAYER:M`, e.g. `e4m3:1`, `mla:4`; or `all`.
fn parse_shape(item: &str) -> Result<Vec<Shape>, String> {
    if item == "all" {
        return Ok(default_shapes());
    }
    let (layer, m) = item
        .split_once(':')
        .ok_or_else(|| format!("`{item}` is not LAYER:M (e.g. e4m3:1) or all"))?;
    let layer = Layer::ALL
        .into_iter()
        .find(|l| l.label() == layer)
        .ok_or_else(|| {
            format!("`{layer}` is not a layer (q8_0, q8_0-planar, e4m3, e4m3-b128, mla)")
        })?;
    let m = m
        .parse::<usize>()
        .ok()
        .filter(|m| (1..=M_MAX).contains(m))
        .ok_or_else(|| format!("`{m}` is not an m the step runs (1 to {M_MAX})"))?;
    Ok(vec![Shape {
        layer,
        m,
        dims: Dims::of(layer),
    }])
}

fn default_shapes() -> Vec<Shape> {
    Layer::ALL
        .into_iter()
        .flat_map(|layer| {
            MS.map(|m| Shape {
                layer,
                m,
                dims: Dims::of(layer),
            })
        })
        .collect()
}

impl Family for DecodeStep {
    type Shape = Shape;
    type Arm = Arm;
    type Inputs = layer::Inputs;
    type Set = Set;
    type Args = Args;

    const NAME: &'static str = "decode-step";
    const ABOUT: &'static str =
        "one layer's decode path as chained kernels (plain, PDL, merged GEMVs, the GLU) against cuBLAS";
    const HELP: &'static str = "\
One transformer layer's decode path as a chain of the project's kernels, captured as one CUDA
graph, and the same layer's GEMMs through cuBLAS.

The dense layer (a 27B model's shapes: hidden 5120, q 12288, k and v 1024, attention 6144, ffn
17408), in each weight format: rms_norm_zq8_f32 of the hidden state; the q, k and v GEMVs; the
attention's place is taken by quantize_q8_1 of an attention output given as input; the o GEMV;
rms_norm_zq8_f32 of its output; the gate and up GEMVs; swiglu; quantize_q8_1; the down GEMV.
The MLA chain (64 heads, kv_rank 512, d_nope and d_v 256, no rope, 2048 gathered slots of a
32768-row pool): absorb_q and decompress_v at the serving table's split, attn_flash and its
combine between them.

Arms, each in both builds (Rust, and the reference .cu through NVRTC):
  step                the chain as one graph of plain launches
  step pdl            each launch a programmatic dependent of the one before (sm_90 and up)
  step merged         q, k and v as one GEMV over their concatenated rows (the weights are one
                      matrix, and the unmerged step launches views of it; its output in three
                      parts, q, k and v each an [m][rows] matrix of its own), gate and up as
                      another, and swiglu_q8_1 (swiglu and quantize_q8_1 in one launch) reading
                      the halves of each of its output rows (dense layers only)
  step merged pdl gemvs
                      merged, the GEMVs alone launched as programmatic dependents (each follows
                      a small kernel, whose run their blocks' placement can overlap)
  step merged pdl small
                      merged, the small kernels alone launched as programmatic dependents (each
                      follows a GEMV, whose drain their block's placement can overlap)
  step glu            q, k and v merged, and gate, up and swiglu as one launch of the GEMV's
                      GLU entry (swiglu in its epilogue), at every m (dense layers only)
  one by one          the step's kernels one at a time, the device synchronised after each
  gemvs only          the step's GEMVs alone (merged, glu or not) as one graph, on the activations
                      the step left: what the norms, quantizations and swiglu add to a step
  each kernel alone   a graph of its one launch, timed like the steps
  cublas bf16 gemms   the dense layer's seven GEMMs (cublasGemmEx, bf16, n = m), in order
  cublaslt fp8 gemms  the same with e4m3 operands (16 columns, the rows past m zero); the peers
                      run the GEMMs alone, without the norms, quantizations and swiglu a
                      framework's step would add, and are timed on the e4m3 cases

Checks per case: rust == cu for every arm; every step arm's outputs (q, k, v, o, the swiglu
output and the down GEMV's; MLA: q_lat, the attention's output, the decompressed output)
byte-identical to the one-by-one run, in each build (so the glu step's GLU gives the bits of the
gate and up GEMVs and swiglu); every output written (poisoned first).
There is no oracle of its own: each kernel's gate holds it to its f64 oracle.

Timing (skipped with --no-timing): one call per sample, the L2 scrubbed before each, so every
graph starts DRAM-cold, arms interleaved, median over rounds. Reported per case: each arm's time,
its bytes (every kernel's reads and writes, summed) and GB/s, a read stream of the step's bytes
timed in the same rounds, the step against the sum of its kernels' times alone, the best step
against its bytes over the 2 GiB ceiling of the run, and against the peers at the same m.

Shapes: LAYER:M with LAYER one of q8_0, q8_0-planar, e4m3, e4m3-b128, mla and M one of 1, 2, 4,
8; or all (the default: every layer at every m). Value class: uniform.

Exit status: 0 all checks passed, 1 a check failed, 2 the gate could not run.";

    fn new(_: &Args) -> Result<Self, String> {
        Ok(DecodeStep {
            peers: RefCell::default(),
        })
    }

    fn default_shapes(&self) -> Vec<Shape> {
        default_shapes()
    }

    fn parse_shapes(&self, item: &str) -> Result<Vec<Shape>, String> {
        parse_shape(item)
    }

    fn edge_shapes(&self) -> Vec<(Shape, &'static str)> {
        let small = |layer, m| Shape {
            layer,
            m,
            dims: Dims::small(layer),
        };
        vec![
            (
                small(Layer::Q8_0, 1),
                "a small dense layer, raw Q8_0, one row",
            ),
            (
                small(Layer::Q8_0Planar, 4),
                "planar Q8_0 on the int8 tensor cores",
            ),
            (small(Layer::E4m3, 2), "e4m3, two rows"),
            (small(Layer::E4m3B128, 8), "block-128, eight rows"),
            (small(Layer::Mla, 3), "a small MLA chain, three tokens"),
        ]
    }

    fn classes(&self) -> &'static [ValueClass] {
        &[ValueClass::Uniform]
    }

    fn footprint(&self, shape: Shape) -> Footprint {
        let bytes = layer::footprint(shape);
        Footprint {
            host_bytes: bytes,
            set_bytes: bytes,
        }
    }

    fn timing(&self) -> TimingMode {
        TimingMode::Scrub
    }

    fn inputs(&self, shape: Shape, _: ValueClass, seed: u64) -> layer::Inputs {
        layer::Inputs::new(shape, seed)
    }

    fn upload(&self, gpu: &Gpu, shape: Shape, inputs: &layer::Inputs) -> Result<Set, Error> {
        let peer = if self.peers_run(gpu, shape)? {
            Some(PeerSet::new(gpu, shape)?)
        } else {
            None
        };
        Ok(Set {
            shape,
            body: Body::upload(gpu, shape, inputs)?,
            graphs: HashMap::new(),
            peer,
        })
    }

    fn arms(&self, shape: Shape) -> Vec<ArmSpec<Arm>> {
        let builds = |arm, timed, bytes| ArmSpec {
            arm,
            runs: Runs::Builds,
            timed,
            bytes,
        };
        let chain_bytes = |fuse| {
            layer::chain(shape, fuse)
                .iter()
                .map(|op| op.bytes(shape))
                .sum()
        };
        let mut arms = vec![builds(Arm::OneByOne, false, chain_bytes(Fuse::None))];
        arms.extend(steps(shape).map(|(arm, fuse)| builds(arm, true, chain_bytes(fuse))));
        if shape.layer != Layer::Mla {
            arms.extend(Fuse::ALL.map(|fuse| {
                let bytes = layer::gemvs(shape, fuse)
                    .iter()
                    .map(|op| op.bytes(shape))
                    .sum();
                builds(Arm::Gemvs { fuse }, true, bytes)
            }));
        }
        let mut solos: Vec<Op> = Vec::new();
        for op in Fuse::ALL
            .into_iter()
            .flat_map(|fuse| layer::chain(shape, fuse))
        {
            if !solos.contains(&op) {
                solos.push(op);
            }
        }
        arms.extend(
            solos
                .into_iter()
                .map(|op| builds(Arm::Solo(op), true, op.bytes(shape))),
        );
        if self.peers.borrow().run(shape) {
            let bytes = |arm| peers::bytes(shape, arm);
            arms.extend([Arm::Bf16, Arm::Fp8].map(|arm| ArmSpec {
                arm,
                runs: Runs::Peer,
                timed: true,
                bytes: bytes(arm),
            }));
        }
        arms
    }

    fn groups(&self, shape: Shape) -> Vec<Group<Arm>> {
        let mut arms = vec![Arm::OneByOne];
        arms.extend(steps(shape).map(|(arm, _)| arm));
        vec![Group {
            name: "steps == one by one".into(),
            arms,
        }]
    }

    fn enqueue(
        &self,
        gpu: &Gpu,
        on: On<'_>,
        shape: Shape,
        arm: Arm,
        set: &mut Set,
    ) -> Result<(), Error> {
        let key = (arm, Side::of(on));
        if let Some(graph) = set.graphs.get(&key) {
            return gpu.replay(graph);
        }
        let graph = match (arm, on) {
            (Arm::OneByOne, On::Build(module)) => {
                for op in layer::chain(shape, Fuse::None) {
                    set.body.launch(op, module, gpu, shape)?;
                    gpu.synchronize()?;
                }
                return Ok(());
            }
            (Arm::Step { .. } | Arm::Gemvs { .. } | Arm::Solo(_), On::Build(module)) => {
                let (ops, pdl) = match arm {
                    Arm::Step { pdl, fuse } => (layer::chain(shape, fuse), pdl),
                    Arm::Gemvs { fuse } => (layer::gemvs(shape, fuse), Pdl::Off),
                    Arm::Solo(op) => (vec![op], Pdl::Off),
                    _ => unreachable!("matched above"),
                };
                let body = &mut set.body;
                let graph = gpu.capture(|| {
                    ops.into_iter().try_for_each(|op| {
                        gpu.set_programmatic(pdl.applies(op, shape));
                        body.launch(op, module, gpu, shape)
                    })
                });
                gpu.set_programmatic(false);
                graph?
            }
            (Arm::Bf16 | Arm::Fp8, On::Peer) => {
                let peer = set
                    .peer
                    .as_mut()
                    .expect("peer arms are listed with their buffers");
                let mut libs = self.peers.borrow_mut();
                gpu.capture(|| peer.gemms(gpu, &mut libs, arm, shape))?
            }
            _ => unreachable!("peer arms run as peers, the others in the builds"),
        };
        gpu.replay(&graph)?;
        set.graphs.insert(key, graph);
        Ok(())
    }

    fn poison(&self, gpu: &Gpu, arm: Arm, set: &mut Set) -> Result<(), Error> {
        match arm {
            Arm::Solo(op) => set.body.poison_outputs(gpu, Some(op)),
            Arm::Gemvs { fuse } => layer::gemvs(set.shape, fuse)
                .into_iter()
                .try_for_each(|op| set.body.poison_outputs(gpu, Some(op))),
            Arm::Bf16 | Arm::Fp8 => set.peer.as_mut().map_or(Ok(()), |p| p.poison(gpu)),
            _ => set.body.poison_outputs(gpu, None),
        }
    }

    fn download(&self, gpu: &Gpu, arm: Arm, set: &Set) -> Result<Vec<Output>, Error> {
        match arm {
            Arm::Solo(op) => set.body.outputs(gpu, Some(op)),
            Arm::Gemvs { fuse } => {
                let mut outputs = Vec::new();
                for op in layer::gemvs(set.shape, fuse) {
                    outputs.extend(set.body.outputs(gpu, Some(op))?);
                }
                Ok(outputs)
            }
            Arm::Step {
                fuse: Fuse::Merged | Fuse::Glu,
                ..
            } => set.body.merged_outputs(gpu, set.shape),
            Arm::Bf16 | Arm::Fp8 => set
                .peer
                .as_ref()
                .map_or(Ok(Vec::new()), |p| p.outputs(gpu, arm)),
            _ => set.body.outputs(gpu, None),
        }
    }

    fn oracle(&self, _: Shape, _: &layer::Inputs, _: Arm, _: Side, _: &[Output]) -> Vec<Check> {
        Vec::new()
    }

    fn summarize(&self, timings: &[CaseTiming<Self>], out: &mut Report<'_>) -> usize {
        summary::summary(timings, out)
    }

    fn chart(run: &Run) -> Result<Figure, String> {
        Ok(chart::figure(run))
    }

    fn stream_bytes(&self, shape: Shape) -> usize {
        layer::chain(shape, Fuse::None)
            .iter()
            .map(|op| op.bytes(shape))
            .sum()
    }
}

impl DecodeStep {
    /// Whether the peers run on `shape` (the e4m3 dense cases, where the libraries load),
    /// opening them on the first such case.
    fn peers_run(&self, gpu: &Gpu, shape: Shape) -> Result<bool, Error> {
        let mut peers = self.peers.borrow_mut();
        peers.open(gpu, shape)?;
        Ok(peers.run(shape))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_take_every_m_from_one_to_eight() {
        for m in 1..=M_MAX {
            let shapes = parse_shape(&format!("e4m3:{m}")).unwrap();
            assert_eq!((shapes[0].layer, shapes[0].m), (Layer::E4m3, m));
        }
        for item in ["e4m3:0", "e4m3:9", "mla:-1", "q8_0:x"] {
            let err = parse_shape(item).unwrap_err();
            assert!(err.contains("is not an m the step runs (1 to 8)"), "{err}");
        }
        assert!(parse_shape("e4m3").unwrap_err().contains("LAYER:M"));
        let all = parse_shape("all").unwrap();
        assert_eq!(all.len(), Layer::ALL.len() * MS.len());
    }
}
