//! Struct-of-arrays Dats (`Config::soa`): the shaders index component by component, the host
//! still sees element-by-element values, and results are bit-identical to the default layout
//! under a deterministic strategy. (CI also runs the core, fusion, fuzz, Airfoil and MPI tests
//! with PARLOOP_SOA=1: every access mode and type, through maps of arity 1 to 4.)

use crate::common;

use common::ctx_with;
use parloop::apps::airfoil::Airfoil;
use parloop::mesh::airfoil::naca0012;
use parloop::{Config, Global, Kernel, Set, Strategy};

fn config(soa: bool, strategy: Strategy) -> Config {
    Config {
        soa,
        strategy,
        ..Config::from_env().unwrap()
    }
}

#[test]
fn airfoil_is_bit_identical_in_both_layouts() {
    let m = naca0012(20, 30);
    let mut results = Vec::new();
    for soa in [false, true] {
        for strategy in [Strategy::GlobalColour, Strategy::Hierarchical] {
            let ctx = ctx_with(config(soa, strategy));
            let a = Airfoil::new(&ctx, &m).unwrap();
            let mut history = Vec::new();
            for _ in 0..10 {
                let g: Global<f32> = ctx.global("rms", &[0.0]).unwrap();
                a.iteration(Some(&g)).unwrap();
                history.push(g.value().unwrap()[0]);
            }
            let shaders = ctx.shaders().join("\n");
            // q (dim 4) is indexed component by component exactly when asked.
            assert_eq!(
                shaders.contains("arrayLength(&"),
                soa,
                "soa {soa}, {strategy:?}"
            );
            results.push((soa, strategy, history, a.q.data_ro().unwrap().to_vec()));
        }
    }
    let (aos, soa) = results.split_at(2);
    for (a, s) in aos.iter().zip(soa) {
        assert_eq!(a.2, s.2, "{:?}: rms history", a.1);
        assert!(a.3 == s.3, "{:?}: q differs between layouts", a.1);
    }
}

#[test]
fn host_access_sees_elements_in_order_with_soa() {
    let ctx = ctx_with(config(true, Strategy::Auto));
    let s = Set::new("s", 5);
    let values: Vec<f32> = (0..15).map(|v| v as f32).collect();
    let mut d = ctx.dat("d", &s, 3, &values).unwrap();
    // Each element's components become (x + 1, y * 2, x + y + z).
    let k = Kernel::new(
        "mix",
        "fn mix(d: ptr<function, array<f32, 3>>) {
            let s = (*d)[0] + (*d)[1] + (*d)[2];
            (*d)[0] += 1.0; (*d)[1] *= 2.0; (*d)[2] = s;
        }",
    );
    ctx.par_loop(&k, &s, &[d.rw()]).unwrap();
    let want: Vec<f32> = values
        .chunks(3)
        .flat_map(|c| [c[0] + 1.0, c[1] * 2.0, c[0] + c[1] + c[2]])
        .collect();
    assert_eq!(&*d.data_ro().unwrap(), &want[..]);
    // Written from the host, read by the device again.
    d.set_data(&values).unwrap();
    ctx.par_loop(&k, &s, &[d.rw()]).unwrap();
    assert_eq!(&*d.data_ro().unwrap(), &want[..]);
}
