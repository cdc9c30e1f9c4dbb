// A channel [0, 2] x [0, 1] around a cylinder of radius 0.15 at (0.5, 0.5), meshed with
// triangles of size 0.03 (0.01 on the cylinder): the advection example's default mesh.
// Regenerate: gmsh -2 -format msh41 data/channel.geo -o data/channel.msh (pip install gmsh);
// finer: add -setnumber h 0.008.
SetFactory("OpenCASCADE");
Rectangle(1) = {0, 0, 0, 2, 1};
Disk(2) = {0.5, 0.5, 0, 0.15};
BooleanDifference{ Surface{1}; Delete; }{ Surface{2}; Delete; }
If (!Exists(h))
  h = 0.03;
EndIf
MeshSize{ PointsOf{ Surface{:}; } } = h;
inlet[] = Curve In BoundingBox{-1e-6, -1e-6, -1e-6, 1e-6, 1 + 1e-6, 1e-6};
outlet[] = Curve In BoundingBox{2 - 1e-6, -1e-6, -1e-6, 2 + 1e-6, 1 + 1e-6, 1e-6};
walls[] = Curve In BoundingBox{-1e-6, -1e-6, -1e-6, 2 + 1e-6, 1e-6, 1e-6};
walls[] += Curve In BoundingBox{-1e-6, 1 - 1e-6, -1e-6, 2 + 1e-6, 1 + 1e-6, 1e-6};
cylinder[] = Curve In BoundingBox{0.35 - 1e-6, 0.35 - 1e-6, -1e-6, 0.65 + 1e-6, 0.65 + 1e-6, 1e-6};
MeshSize{ PointsOf{ Curve{cylinder[]}; } } = h / 3;
Physical Curve("inlet", 1) = {inlet[]};
Physical Curve("outlet", 2) = {outlet[]};
Physical Curve("walls", 3) = {walls[]};
Physical Curve("cylinder", 4) = {cylinder[]};
Physical Surface("fluid", 10) = {Surface{:}};
