// graph-to-mid{program-layouts=true}: given no catalog, each function is also lowered with the
// opt-in layouts (the 3-D grid) and the lowering whose program estimate is lower is kept; the
// configuration then records the catalog that lowered it. Without the option the default
// catalog alone (here the 2-D grid: 19853 estimated cycles against the 3-D grid's 10479).
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=1472 program-layouts=true}' | filecheck %s --check-prefix=WIDE
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=1472}' | filecheck %s --check-prefix=PLAIN
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=1472 program-layouts=true catalog=amp_gemm_f16_grid}' | filecheck %s --check-prefix=NAMED

func.func @gemm(%a: tensor<256x320xf16>, %b: tensor<320x192xf16>) -> tensor<256x192xf16> {
  %c = graph.gemm %a, %b : (tensor<256x320xf16>, tensor<320x192xf16>) -> tensor<256x192xf16>
  func.return %c : tensor<256x192xf16>
}
// WIDE:  catalog = [{{.*}}"amp_gemm_f16_grid3d", "amp_gemm_f32_grid3d"]
// WIDE:  %c = mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_grid3d"
// WIDE-SAME: {ipu.estimate = 10479 : i64}
// PLAIN-NOT: grid3d
// PLAIN: %c = mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_grid"
// PLAIN-SAME: {ipu.estimate = 19853 : i64}
// A named catalog is taken as given.
// NAMED: catalog = ["amp_gemm_f16_grid"]
// NAMED: plan #mid.plan<"amp_gemm_f16_grid"
