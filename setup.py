"""ament_python package that also installs with pip into a plain virtual environment."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "musculo_control"
#: musculo study --engine dask
CLUSTER = ["dask[distributed]>=2024.1"]
#: benchmarks/bench_solvers.py: the QP solver field beside DAQP and OSQP (doc/solvers.md); qpsolvers
#: is the tick benchmark's baseline (a typical user's solve_ls)
BENCH = ["proxsuite", "piqp", "quadprog", "clarabel", "qpsolvers"]
#: rclpy with Fast DDS and the message packages the nodes use, from PyPI (ROS 2 Kilted wheels)
#: make docs: Sphinx and its Markdown (MyST) parser
DOCS = ["sphinx>=7", "myst-parser>=2"]
ROS_WHEELS = ["ros-rclpy", "ros-rmw-fastrtps-cpp", "ros-sensor-msgs", "ros-geometry-msgs",
              "ros-std-msgs", "ros-std-srvs", "ros-diagnostic-msgs", "ros-visualization-msgs",
              "ros-trajectory-msgs", "ros-rosgraph-msgs"]


def tree(folder: str) -> list[tuple[str, list[str]]]:
    """data_files entries that mirror ``folder`` under share/<package>/."""
    import os

    entries = []
    for root, _dirs, files in os.walk(folder):
        paths = [os.path.join(root, f) for f in files]
        if paths:
            entries.append((os.path.join("share", PACKAGE, root), paths))
    return entries


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    package_data={PACKAGE: ["py.typed"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        *tree("config"),
    ],
    python_requires=">=3.10",
    # rosbags writes every run's ROS 2 bag (musculo simulate / report); daqp is the default QP
    # solver (qp.solver, doc/performance.md "Which solver"); tqdm draws musculo study's progress bar (rate,
    # ETA, terminal width, plain lines in CI logs): run-time dependencies
    install_requires=["numpy", "pin", "osqp>=1.0", "daqp>=0.11", "pyyaml", "mujoco>=3.1",
                      "scipy", "matplotlib", "rosbags>=0.10", "tqdm"],
    # ros: rclpy and the message packages of the node graph, as ROS 2 wheels from PyPI (for a
    # machine without a ROS 2 distribution; a colcon build uses the distribution's instead).
    # test: mcap + mcap-ros2-support read those bags independently; the node-graph tests run
    # the real nodes on the ros wheels; pytest-timeout ends a hung graph test instead of CI.
    # cluster: musculo study --engine dask (Dask's distributed scheduler; the tests run it on a
    # LocalCluster, so the test extra has it too)
    # docs: the documentation site (doc/, `make docs`): Sphinx with MyST Markdown pages, as
    # rosdoc2 builds ROS packages
    # bench: the solvers of benchmarks/bench_solvers.py (the tests run it on a few QPs, so the
    # test extra has them too)
    extras_require={"ros": ROS_WHEELS,
                    "cluster": CLUSTER,
                    "docs": DOCS,
                    "bench": BENCH,
                    "test": ["pytest", "pytest-timeout", "hypothesis", "mcap",
                             "mcap-ros2-support", *ROS_WHEELS, *CLUSTER, *BENCH]},
    zip_safe=True,
    maintainer="musculo_control team",
    maintainer_email="musculo-control@example.org",
    description="Biomimetic operational space control for tendon-driven musculoskeletal arms",
    license="Apache-2.0",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "musculo = musculo_control.cli:main",
            # ROS 2 nodes (need rclpy; installed to lib/musculo_control for `ros2 run`)
            "potentiometer_node = musculo_control.nodes.potentiometer_node:main",
            "tendon_driver_node = musculo_control.nodes.tendon_driver_node:main",
            "dynamics_node = musculo_control.nodes.dynamics_node:main",
            "activation_qp_node = musculo_control.nodes.activation_qp_node:main",
            "mock_hardware_node = musculo_control.nodes.mock_hardware_node:main",
            "goal_node = musculo_control.nodes.goal_node:main",
            "muscle_marker_node = musculo_control.nodes.muscle_marker_node:main",
            "control_process = musculo_control.nodes.control_process:main",
        ],
    },
)
