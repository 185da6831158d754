"""Contact geometry and contact kinematics, ROS-free (numpy/scipy).

- ``rotations``: quaternion (x, y, z, w) <-> rotation matrix, poses, batched.
- ``polytope``: convex polytopes (half-spaces A x <= c with vertices, faces, edge directions): boxes, prisms,
  V-guide tents, from vertices, half-spaces or a mesh (trimesh); rigid transforms, shifts, rotations and
  enlargements (the perturbations of agar_contact.md §3.9).
- ``body``: compound rigid bodies (named convex parts + mass properties), YAML geometry files.
- ``contacts``: contact set of two posed compound bodies (the CDT ``mindist`` replacement of agar_contact.md
  §3.2): per contact the point r, interference δ, its rate δ̇, the normal n (force direction on the payload),
  the sliding tangent t and the lever arm.
- ``capsule``: capsules against convex polytopes through python-fcl (GJK/EPA).
- ``perturb``: shifts, rotations and enlargements of a part in its own frame (agar_contact.md §3.9).
- ``peg_hole``: the capsule peg / cylinder-with-spherical-bottom hole of Wahl et al. (wahl_colton.md Part A),
  closed form, batched over many pairs.
"""
