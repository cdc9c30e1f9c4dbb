// Airfoil's five kernels (OP2's airfoil.cpp in WGSL), in single precision. The double build
// (apps::airfoil::kernels) replaces every f32 by f64, so every floating-point type is written
// out (no abstract-float `var`). Consts gam, gm1, cfl, eps and qinf are compiled in.

fn save_soln(q: ptr<function, array<f32, 4>>, qold: ptr<function, array<f32, 4>>) {
    for (var n = 0; n < 4; n++) { (*qold)[n] = (*q)[n]; }
}

fn adt_calc(x: ptr<function, array<f32, 8>>, q: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>) {
    let ri = 1.0 / (*q)[0];
    let u = ri * (*q)[1];
    let v = ri * (*q)[2];
    let c = sqrt(gam * gm1 * (ri * (*q)[3] - 0.5 * (u * u + v * v)));
    var a: f32 = 0.0;
    for (var k = 0; k < 4; k++) {
        let k2 = (k + 1) % 4;
        let dx = (*x)[2 * k2] - (*x)[2 * k];
        let dy = (*x)[2 * k2 + 1] - (*x)[2 * k + 1];
        a += abs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
    }
    (*adt)[0] = a / cfl;
}

fn res_calc(x: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 8>>,
            adt: ptr<function, array<f32, 2>>, res: ptr<function, array<f32, 8>>) {
    let dx = (*x)[0] - (*x)[2];
    let dy = (*x)[1] - (*x)[3];
    var ri = 1.0 / (*q)[0];
    let p1 = gm1 * ((*q)[3] - 0.5 * ri * ((*q)[1] * (*q)[1] + (*q)[2] * (*q)[2]));
    let vol1 = ri * ((*q)[1] * dy - (*q)[2] * dx);
    ri = 1.0 / (*q)[4];
    let p2 = gm1 * ((*q)[7] - 0.5 * ri * ((*q)[5] * (*q)[5] + (*q)[6] * (*q)[6]));
    let vol2 = ri * ((*q)[5] * dy - (*q)[6] * dx);
    let mu = 0.5 * ((*adt)[0] + (*adt)[1]) * eps;
    var f = 0.5 * (vol1 * (*q)[0] + vol2 * (*q)[4]) + mu * ((*q)[0] - (*q)[4]);
    (*res)[0] += f;
    (*res)[4] -= f;
    f = 0.5 * (vol1 * (*q)[1] + p1 * dy + vol2 * (*q)[5] + p2 * dy) + mu * ((*q)[1] - (*q)[5]);
    (*res)[1] += f;
    (*res)[5] -= f;
    f = 0.5 * (vol1 * (*q)[2] - p1 * dx + vol2 * (*q)[6] - p2 * dx) + mu * ((*q)[2] - (*q)[6]);
    (*res)[2] += f;
    (*res)[6] -= f;
    f = 0.5 * (vol1 * ((*q)[3] + p1) + vol2 * ((*q)[7] + p2)) + mu * ((*q)[3] - (*q)[7]);
    (*res)[3] += f;
    (*res)[7] -= f;
}

fn bres_calc(x: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>,
             res: ptr<function, array<f32, 4>>, bound: ptr<function, array<i32, 1>>) {
    let dx = (*x)[0] - (*x)[2];
    let dy = (*x)[1] - (*x)[3];
    var ri = 1.0 / (*q)[0];
    let p1 = gm1 * ((*q)[3] - 0.5 * ri * ((*q)[1] * (*q)[1] + (*q)[2] * (*q)[2]));
    if ((*bound)[0] == 1) {
        (*res)[1] += p1 * dy;
        (*res)[2] += -p1 * dx;
    } else {
        let vol1 = ri * ((*q)[1] * dy - (*q)[2] * dx);
        ri = 1.0 / qinf[0];
        let p2 = gm1 * (qinf[3] - 0.5 * ri * (qinf[1] * qinf[1] + qinf[2] * qinf[2]));
        let vol2 = ri * (qinf[1] * dy - qinf[2] * dx);
        let mu = (*adt)[0] * eps;
        (*res)[0] += 0.5 * (vol1 * (*q)[0] + vol2 * qinf[0]) + mu * ((*q)[0] - qinf[0]);
        (*res)[1] += 0.5 * (vol1 * (*q)[1] + p1 * dy + vol2 * qinf[1] + p2 * dy) + mu * ((*q)[1] - qinf[1]);
        (*res)[2] += 0.5 * (vol1 * (*q)[2] - p1 * dx + vol2 * qinf[2] - p2 * dx) + mu * ((*q)[2] - qinf[2]);
        (*res)[3] += 0.5 * (vol1 * ((*q)[3] + p1) + vol2 * (qinf[3] + p2)) + mu * ((*q)[3] - qinf[3]);
    }
}

fn update_cell(qold: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 4>>,
               res: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>) -> f32 {
    let adti = 1.0 / (*adt)[0];
    var sq: f32 = 0.0;
    for (var n = 0; n < 4; n++) {
        let del = adti * (*res)[n];
        (*q)[n] = (*qold)[n] - del;
        (*res)[n] = 0.0;
        sq += del * del;
    }
    return sq;
}

fn update(qold: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 4>>,
          res: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>) {
    update_cell(qold, q, res, adt);
}

fn update_rms(qold: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 4>>,
              res: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>, rms: ptr<function, array<f32, 1>>) {
    (*rms)[0] += update_cell(qold, q, res, adt);
}
