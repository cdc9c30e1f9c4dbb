//! Valid Gmsh files written as the formats specify, for the reader's fuzzer: MSH 4.1 ASCII, 4.1
//! binary in both byte orders and size_t widths, 2.2 ASCII; node tags ascending, permuted,
//! sparse or duplicated.

use super::{Format, Tags};
use parloop::mesh::Mesh;
use parloop::util::Rng;

/// A file and what reading it must give: the mesh, or an error naming a duplicated node tag.
pub struct Written {
    pub bytes: Vec<u8>,
    pub expect: Result<Mesh, u64>,
    /// Offset and width of the binary numbers worth mutating (counts, tags, types, flags).
    pub fields: Vec<(usize, usize)>,
    pub big: bool,
}

/// Writes numbers as a format wants them: ASCII words (a record per line) or binary.
#[derive(Default)]
struct Out {
    b: Vec<u8>,
    bin: Option<(usize, bool)>,
    fields: Vec<(usize, usize)>,
}

impl Out {
    fn text(&mut self, s: &str) {
        self.b.extend_from_slice(s.as_bytes());
    }
    /// A number: its ASCII word, or `bits` in `width` bytes (0: a size_t).
    fn num(&mut self, word: String, bits: u64, width: usize) {
        let Some((size_t, big)) = self.bin else {
            self.text(&word);
            return self.b.push(b' ');
        };
        let w = if width == 0 { size_t } else { width };
        if width != 8 {
            self.fields.push((self.b.len(), w));
        }
        self.b.extend(encode(bits, w, big));
    }
    fn size_t(&mut self, v: u64) {
        self.num(v.to_string(), v, 0);
    }
    fn int(&mut self, v: i32) {
        self.num(v.to_string(), v as u32 as u64, 4);
    }
    fn double(&mut self, v: f64) {
        self.num(format!("{v:?}"), v.to_bits(), 8);
    }
    /// A record of ints then size_ts.
    fn rec(&mut self, ints: &[i32], sizes: &[u64]) {
        ints.iter().for_each(|&v| self.int(v));
        sizes.iter().for_each(|&v| self.size_t(v));
        self.nl();
    }
    /// Ends an ASCII record (a line).
    fn nl(&mut self) {
        if self.bin.is_none() {
            if self.b.last() == Some(&b' ') {
                self.b.pop();
            }
            self.b.push(b'\n');
        }
    }
    /// Ends a section: binary data is followed by a newline before `$End...`.
    fn end(&mut self, name: &str) {
        if self.bin.is_some() {
            self.b.push(b'\n');
        }
        self.text(&format!("$End{name}\n"));
    }
}

pub fn encode(v: u64, width: usize, big: bool) -> Vec<u8> {
    let mut b = v.to_le_bytes()[..width].to_vec();
    if big {
        b.reverse();
    }
    b
}

fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i + 1));
    }
}

/// `m` written in format `f` with node tags `tags`: vertices in a random file order (except for
/// ascending tags), in 1 to 4 blocks (4.1); elements by physical group (one entity each, tag
/// group + 1), facets first.
pub fn write(m: &Mesh, f: Format, tags: Tags, rng: &mut Rng) -> Written {
    let (n, top) = (m.nvertices(), m.dim());
    let mut order: Vec<usize> = (0..n).collect();
    // The tag of the node at each file position.
    let mut ftag: Vec<u64> = (1..=n as u64).collect();
    if !matches!(tags, Tags::Ascending) {
        shuffle(&mut order, rng);
        shuffle(&mut ftag, rng);
    }
    if matches!(tags, Tags::Sparse) {
        ftag.iter_mut()
            .for_each(|t| *t = *t * 1000 + rng.below(1000) as u64);
    }
    let mut dup = None;
    if matches!(tags, Tags::Duplicate) {
        let (j, k) = (rng.below(n), rng.below(n - 1));
        ftag[j] = ftag[k + usize::from(k >= j)];
        dup = Some(ftag[j]);
    }
    let mut pos = vec![0u32; n];
    for (i, &v) in order.iter().enumerate() {
        pos[v] = i as u32;
    }
    let group_of = |dim: usize, k: usize| {
        let mut g = m.groups.iter().filter(|g| g.dim == dim);
        let tags: Vec<i32> = g
            .by_ref()
            .filter(|g| g.members.contains(&(k as u32)))
            .map(|g| g.tag)
            .collect();
        assert!(tags.len() <= 1, "one physical group per element");
        tags.first().copied().unwrap_or(0)
    };
    // Elements in file order: (dim, physical tag or 0, vertices).
    let mut els: Vec<(usize, i32, Vec<u32>)> = (m.facets.iter().enumerate())
        .map(|(k, f)| (top - 1, group_of(top - 1, k), f.clone()))
        .chain((0..m.ncells()).map(|c| (top, group_of(top, c), m.cell(c).to_vec())))
        .collect();
    els.sort_by_key(|e| (e.0, e.1));
    // What the reader must give.
    let mut expect = Mesh {
        coords: order.iter().map(|&v| m.coords[v]).collect(),
        cells: Vec::new(),
        facets: Vec::new(),
        ..m.clone()
    };
    expect.groups.iter_mut().for_each(|g| g.members.clear());
    for (d, p, vs) in &els {
        let vs: Vec<u32> = vs.iter().map(|&v| pos[v as usize]).collect();
        let k = if *d == top {
            expect.cells.extend(vs);
            expect.ncells() - 1
        } else {
            expect.facets.push(vs);
            expect.facets.len() - 1
        };
        let gs = expect.groups.iter_mut();
        gs.filter(|g| (g.dim, g.tag) == (*d, *p))
            .for_each(|g| g.members.push(k as u32));
    }
    expect.groups.sort_by_key(|g| (g.dim, g.tag));
    let tag_of = |v: u32| ftag[pos[v as usize] as usize];
    let mut o = Out::default();
    let (head, size_t, big) = f;
    o.text(&format!("$MeshFormat\n{head} {size_t}\n"));
    if head == "4.1 1" {
        o.b.extend(encode(1, 4, big));
        o.text("\n");
        o.bin = Some((size_t, big));
    }
    o.text("$EndMeshFormat\n");
    o.text(&format!("$PhysicalNames\n{}\n", m.groups.len()));
    for g in &m.groups {
        o.text(&format!("{} {} \"{}\"\n", g.dim, g.tag, g.name));
    }
    o.text("$EndPhysicalNames\n");
    // Blocks of elements: one per (dim, group).
    let mut blocks: Vec<(usize, i32, Vec<&[u32]>)> = Vec::new();
    for (d, p, vs) in &els {
        match blocks.last_mut() {
            Some(b) if (b.0, b.1) == (*d, *p) => b.2.push(vs),
            _ => blocks.push((*d, *p, vec![vs])),
        }
    }
    if head == "2.2 0" {
        o.text(&format!("$Nodes\n{n}\n"));
        for (&t, &v) in ftag.iter().zip(&order) {
            let [x, y, z] = m.coords[v];
            o.text(&format!("{t} {x:?} {y:?} {z:?}\n"));
        }
        o.text(&format!("$EndNodes\n$Elements\n{}\n", els.len()));
        for (k, (_, p, vs)) in els.iter().enumerate() {
            o.text(&format!("{} {} 2 {p} {}", k + 1, gmsh_type(vs, m), p + 1));
            vs.iter().for_each(|&v| o.text(&format!(" {}", tag_of(v))));
            o.text("\n");
        }
        o.text("$EndElements\n");
    } else {
        write41(&mut o, m, &blocks, &ftag, &order, &tag_of, rng);
    }
    let expect = dup.map_or(Ok(expect), Err);
    Written {
        bytes: o.b,
        expect,
        fields: o.fields,
        big,
    }
}

/// The 4.1 sections: `$Entities` (one per block), `$Nodes` in 1 to 4 blocks, `$Elements`.
fn write41(
    o: &mut Out,
    m: &Mesh,
    blocks: &[(usize, i32, Vec<&[u32]>)],
    ftag: &[u64],
    order: &[usize],
    tag_of: &dyn Fn(u32) -> u64,
    rng: &mut Rng,
) {
    let n = ftag.len();
    o.text("$Entities\n");
    let per_dim = |d| blocks.iter().filter(|b| b.0 == d).count() as u64;
    o.rec(&[], &[per_dim(0), per_dim(1), per_dim(2), per_dim(3)]);
    for (d, p, _) in blocks {
        o.int(p + 1);
        (0..if *d == 0 { 3 } else { 6 }).for_each(|_| o.double(0.0));
        let phys: &[i32] = if *p != 0 { &[*p] } else { &[] };
        o.size_t(phys.len() as u64);
        o.rec(phys, if *d > 0 { &[0] } else { &[] });
    }
    o.end("Entities");
    let mut cuts: Vec<usize> = (0..rng.below(n.min(4))).map(|_| rng.below(n + 1)).collect();
    cuts.extend([0, n]);
    cuts.sort();
    o.text("$Nodes\n");
    let (lo, hi) = (ftag.iter().min().unwrap(), ftag.iter().max().unwrap());
    o.rec(&[], &[cuts.len() as u64 - 1, n as u64, *lo, *hi]);
    for w in cuts.windows(2) {
        o.rec(&[m.dim() as i32, 1, 0], &[(w[1] - w[0]) as u64]);
        ftag[w[0]..w[1]].iter().for_each(|&t| o.rec(&[], &[t]));
        for &v in &order[w[0]..w[1]] {
            m.coords[v].iter().for_each(|&x| o.double(x));
            o.nl();
        }
    }
    o.end("Nodes");
    o.text("$Elements\n");
    let total = blocks.iter().map(|b| b.2.len() as u64).sum();
    o.rec(&[], &[blocks.len() as u64, total, 1, total]);
    let mut tag = 0;
    for (d, p, vs) in blocks {
        o.rec(&[*d as i32, p + 1, gmsh_type(vs[0], m)], &[vs.len() as u64]);
        for e in vs {
            tag += 1;
            o.size_t(tag);
            o.rec(&[], &e.iter().map(|&v| tag_of(v)).collect::<Vec<_>>());
        }
    }
    o.end("Elements");
}

/// Gmsh's type of an element of `m` with these vertices.
fn gmsh_type(vs: &[u32], m: &Mesh) -> i32 {
    match vs.len() {
        n if n == m.cell_type.vertices() => m.cell_type.gmsh_type() as i32,
        2 => 1,
        3 => 2,
        _ => 3,
    }
}
