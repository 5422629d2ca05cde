from nvflare.app_common.executors.launcher_executor import LauncherExecutor


class ClientAPILauncherExecutor(LauncherExecutor):
    pass
