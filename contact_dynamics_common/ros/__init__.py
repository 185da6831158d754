"""The ROS 2 side shared by every node: what runs with rclpy, and what a node declares without it.

- ``params``: ParamSpec (description, range), validation, ROS 2 params-file loading -- ROS-free, so that
  run-bag refuses a bad value with the same reason as the live node;
- ``node``: the estimator node base (parameters, lifecycle, diagnostics, reset service, timing, ``node_main``),
  with ``inputs`` (``NodeInputs``: subscriptions of the sensor inputs, their ledger and status);
- ``qos``: the QoS profiles of inputs, outputs and latched topics;
- ``meters``: input rates and losses, update cost, the DiagnosticStatus helpers;
- ``env``: the isolated ROS environment (loopback discovery, own domain) every process started here uses;
- ``fill``: an rclpy message filled from a nested dict;
- ``play``: a bag published over DDS at recorded speed with ``/clock``.

Importing this package imports no rclpy; ``node``, ``play`` and ``fill`` do (``play`` lazily).
"""
