//! Drawing a frame: p (or, in the implicit mode, u), straight from the simulation's device
//! buffer, colours the triangle mesh.

use super::*;

pub(super) fn draw(s: &mut State) -> Result<(), JsValue> {
    let gpu = s.ctx.gpu();
    let r = &s.renderer;
    // The implicit mode draws u, the wave p.
    let field = s.heat.as_ref().map_or(&s.wave.p, |h| &h.u);
    let Some(p) = s.ctx.device_buffer(field) else {
        log::warn!("draw: no device buffer for p yet");
        return Ok(()); // nothing computed yet
    };
    let srgb = if r.target.format().is_srgb() {
        1.0f32
    } else {
        0.0
    };
    // The wave's p over [-range, range]; the heat's u over [0, its largest value].
    let (lo, hi) = match &s.heat {
        Some(h) => (0.0, h.top.max(1e-30)),
        None => (-s.range, s.range),
    };
    gpu.queue
        .write_buffer(&r.view, 0, bytemuck_cast(&[lo, hi, srgb, 0.0]));
    let bind = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("wave render"),
        layout: &r.pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: p.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: r.view.as_entire_binding(),
            },
        ],
    });
    let (frame, target) = match &r.target {
        Target::Offscreen { texture, .. } => (None, texture.create_view(&Default::default())),
        Target::Surface { surface, config } => match surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t)
            | wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
                let view = t.texture.create_view(&Default::default());
                (Some(t), view)
            }
            other => {
                log::warn!(
                    "draw: no surface texture ({}), reconfiguring",
                    match other {
                        wgpu::CurrentSurfaceTexture::Timeout => "timeout",
                        wgpu::CurrentSurfaceTexture::Occluded => "occluded",
                        wgpu::CurrentSurfaceTexture::Outdated => "outdated",
                        _ => "lost or unavailable",
                    }
                );
                surface.configure(&gpu.device, config);
                return Ok(());
            }
        },
    };

    let mut enc = gpu.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("wave render"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::WHITE),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&r.pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.set_vertex_buffer(0, r.vertices.slice(..));
        pass.set_index_buffer(r.indices.slice(..), wgpu::IndexFormat::Uint32);
        pass.draw_indexed(0..r.count, 0, 0..1);
    }
    gpu.queue.submit([enc.finish()]);
    if let Some(frame) = frame {
        gpu.queue.present(frame);
    }
    Ok(())
}
