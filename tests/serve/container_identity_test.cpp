// Pod and container identity from synthetic /proc and kubelet trees made by the test.
#include "container_identity.hpp"
#include "process_labels.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpumem::serve {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPodUid = "3f9d2b7e-1c4a-4e8b-9a0d-5b6c7d8e9f01";
constexpr const char* kContainer =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(ContainerIdentity, ReadsSystemdCgroupV2WithContainerd) {
  auto id = identity_from_cgroup(
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod3f9d2b7e_1c4a_4e8b_9a0d_5b6c7d8e9f01.slice/"
      "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n");
  EXPECT_EQ(id.pod_uid, kPodUid);
  EXPECT_EQ(id.container_id, kContainer);
}

TEST(ContainerIdentity, ReadsCgroupfsV1AndCrio) {
  auto v1 = identity_from_cgroup(
      "12:pids:/kubepods/besteffort/pod3f9d2b7e-1c4a-4e8b-9a0d-5b6c7d8e9f01/"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
      "11:memory:/kubepods/besteffort/pod3f9d2b7e-1c4a-4e8b-9a0d-5b6c7d8e9f01/"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n");
  EXPECT_EQ(v1.pod_uid, kPodUid);
  EXPECT_EQ(v1.container_id, kContainer);
  auto crio = identity_from_cgroup(
      "0::/kubepods.slice/kubepods-pod3f9d2b7e_1c4a_4e8b_9a0d_5b6c7d8e9f01.slice/"
      "crio-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n");
  EXPECT_EQ(crio.pod_uid, kPodUid);
  EXPECT_EQ(crio.container_id, kContainer);
}

TEST(ContainerIdentity, AHostProcessHasNone) {
  auto id = identity_from_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n");
  EXPECT_TRUE(id.pod_uid.empty());
  EXPECT_TRUE(id.container_id.empty());
  auto docker = identity_from_cgroup(
      "0::/system.slice/"
      "docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n");
  EXPECT_TRUE(docker.pod_uid.empty());
  EXPECT_EQ(docker.container_id, kContainer);
  for (const char* junk : {"", "\n\n", "garbage", "0::", "0::/kubepods/podnot-a-uuid/xyz\n"}) {
    auto none = identity_from_cgroup(junk);
    EXPECT_TRUE(none.pod_uid.empty() && none.container_id.empty()) << junk;
  }
}

class Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpumem-k8s-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc");
    fs::create_directories(root_ / "containers");
  }
  void TearDown() override { fs::remove_all(root_); }
  void process(unsigned pid, const std::string& comm, const std::string& cgroup,
               const std::string& nspid) {
    const fs::path dir = root_ / "proc" / std::to_string(pid);
    fs::create_directories(dir);
    std::ofstream(dir / "comm") << comm << "\n";
    std::ofstream(dir / "cgroup") << cgroup;
    std::ofstream(dir / "status") << "Name:\t" << comm << "\nNSpid:\t" << nspid
                                  << "\nVmRSS: 1 kB\n";
  }
  fs::path root_;
};

TEST_F(Tree, NamesPodsFromTheKubeletsContainerLinks) {
  process(4242, "python3",
          std::string("0::/kubepods.slice/kubepods-burstable.slice/"
                      "kubepods-burstable-pod3f9d2b7e_1c4a_4e8b_9a0d_5b6c7d8e9f01.slice/"
                      "cri-containerd-") +
              kContainer + ".scope\n",
          "4242\t17");
  process(77, "Xorg", "0::/system.slice/display-manager.service\n", "77");
  // What the kubelet keeps: "<pod>_<namespace>_<container>-<container id>.log".
  std::ofstream(root_ / "containers" /
                (std::string("trainer-7f9c_ml-team_pytorch-") + kContainer + ".log"));
  std::ofstream(root_ / "containers" / "junk.log");
  ContainerDirectory directory(root_ / "proc", root_ / "containers");
  directory.refresh();
  ContainerIdentity id = directory.identify(4242);
  EXPECT_EQ(id.pod_uid, kPodUid);
  EXPECT_EQ(id.container_id, kContainer);
  EXPECT_EQ(id.namespace_name, "ml-team");
  EXPECT_EQ(id.pod, "trainer-7f9c");
  EXPECT_EQ(id.container, "pytorch");
  EXPECT_EQ(id.container_pid, "17");  // its pid in the container's namespace
  EXPECT_EQ(directory.process_name(4242), "python3");
  ContainerIdentity host = directory.identify(77);
  EXPECT_TRUE(host.pod_uid.empty());
  EXPECT_TRUE(host.container_pid.empty());
  EXPECT_EQ(directory.process_name(77), "Xorg");
  ContainerIdentity gone = directory.identify(99999);
  EXPECT_TRUE(gone.pod_uid.empty());
  EXPECT_EQ(directory.process_name(99999), "");
}

TEST_F(Tree, WithoutTheKubeletTheCgroupStillTells) {
  process(4242, "python3",
          std::string("0::/kubepods/pod3f9d2b7e-1c4a-4e8b-9a0d-5b6c7d8e9f01/") + kContainer + "\n",
          "4242\t1");
  ContainerDirectory directory(root_ / "proc", root_ / "nowhere");
  directory.refresh();
  ContainerIdentity id = directory.identify(4242);
  EXPECT_EQ(id.pod_uid, kPodUid);
  EXPECT_EQ(id.container_id, kContainer);
  EXPECT_TRUE(id.pod.empty());
  EXPECT_EQ(id.container_pid, "1");
}

// A program in a container published with its own pid (12) and namespace; the exporter, in the
// host's namespace, finds it as host pid 5000 and checks its start time there.
TEST_F(Tree, FindsPublishersInOtherPidNamespaces) {
  const fs::path host = root_ / "proc" / "5000";
  fs::create_directories(host / "ns");
  fs::create_symlink("pid:[4026539999]", host / "ns" / "pid");
  std::ofstream(host / "status") << "Name:\tpython3\nNSpid:\t5000\t12\n";
  // "pid (comm) state" then fields 4…21, and the start time (field 22): 777.
  std::ofstream(host / "stat") << "5000 (python3) S 1 5000 5000 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 "
                                  "1 0 777 1000 100\n";
  PublisherLiveness liveness(root_ / "proc");
  detail::PublishedTrace in_container{"step", 12, "", 1, {}, {}, 777, "pid:[4026539999]"};
  EXPECT_TRUE(liveness.running(in_container));
  detail::PublishedTrace restarted = in_container;
  restarted.pid_start = 778;  // the pid was reused
  EXPECT_FALSE(liveness.running(restarted));
  detail::PublishedTrace elsewhere = in_container;
  elsewhere.pid_namespace = "pid:[4026538888]";  // another container, gone
  EXPECT_FALSE(liveness.running(elsewhere));
  detail::PublishedTrace old_writer = in_container;
  old_writer.pid_namespace.clear();  // taken as the exporter's namespace: no pid 12 in this tree
  EXPECT_FALSE(liveness.running(old_writer));
}

// A collection reads /proc only for processes it has not seen, and for known ones once their
// labels are a second old; a process absent from a collection is forgotten.
TEST_F(Tree, ProcessLabelsAreReadOncePerProcessAndRefreshedWhenOld) {
  process(4242, "python3", "0::/system.slice/a.service\n", "4242");
  process(77, "Xorg", "0::/system.slice/display-manager.service\n", "77");
  ContainerDirectory directory(root_ / "proc", root_ / "containers");
  ProcessLabelCache cache(directory, std::chrono::seconds(1));
  constexpr std::int64_t kStart = 5'000'000'000;
  EXPECT_EQ(cache.labels(4242, kStart).name, "python3");
  EXPECT_EQ(cache.labels(77, kStart).name, "Xorg");
  EXPECT_EQ(cache.labels(4242, kStart).name, "python3");  // on a second device, same collection
  cache.end_collection();
  EXPECT_EQ(cache.reads(), 2u);
  process(4242, "trainer", "0::/system.slice/a.service\n", "4242 17");  // renamed, nested
  for (int tick = 1; tick < 100; ++tick) {
    const std::int64_t now = kStart + tick * 10'000'000;  // 10 ms collections for 990 ms
    EXPECT_EQ(cache.labels(4242, now).name, "python3");
    EXPECT_EQ(cache.labels(77, now).name, "Xorg");
    cache.end_collection();
  }
  EXPECT_EQ(cache.reads(), 2u);
  const ProcessLabels& renamed = cache.labels(4242, kStart + 1'000'000'000);
  EXPECT_EQ(renamed.name, "trainer");
  EXPECT_EQ(renamed.container.container_pid, "17");
  EXPECT_EQ(cache.reads(), 3u);
  cache.end_collection();  // 77 was not in this collection
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.labels(77, kStart + 1'010'000'000).name, "Xorg");  // read again
  EXPECT_EQ(cache.reads(), 4u);
}

}  // namespace
}  // namespace gpumem::serve
