from .main import *  # noqa
from .main import config_dir, load_offline_nodes, main, run_bag, RUN_BAG_KEPT, FRAMEWORK_PARAMS, build_parser  # noqa
